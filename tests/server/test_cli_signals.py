"""A `loci` command stopped by SIGTERM cleans up as one stopped by Ctrl-C does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.server.live_server import ROOT


def _processes_naming(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_for(check: Callable[[], object], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A directory with a short path: PostgreSQL's socket path must fit in about 100 bytes."""
    path = Path(tempfile.mkdtemp(prefix="lsig-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _databases(tmp_path: Path) -> int:
    """How many databases the child's server holds (2 templates and `postgres` before the eval's)."""
    return sum(len(list(p.iterdir())) for p in tmp_path.glob("loci-pg-*/pgdata/base"))


@pytest.mark.integration
@pytest.mark.parametrize("phase", ["starting", "replaying"])
def test_an_eval_stopped_by_sigterm_stops_its_embedded_postgres(short_tmp: Path, phase: str) -> None:
    tmp_path = short_tmp
    env = {**os.environ, "TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    errors = tmp_path / "stderr"
    child = subprocess.Popen(
        [sys.executable, "-m", "server.cli", "eval", "run", "--dataset", "locomo", "--backend", "postgres"]
        + ["--embedder", "hash", "--no-baselines", "--out", str(tmp_path / "runs"), "--quiet"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(sink := errors.open("wb")),
    )
    try:

        def running_and(check: Callable[[], object]) -> None:
            _wait_for(lambda: child.poll() is not None or check(), 180)
            if child.poll() is not None:
                err = errors.read_text(errors="replace")
                pytest.fail(f"the eval ended ({child.returncode}) before its signal: {err[-2000:]}")
            assert check(), "the eval's PostgreSQL did not come up"

        running_and(lambda: list(tmp_path.glob("loci-pg-*/pgdata/postmaster.pid")))
        (base,) = tmp_path.glob("loci-pg-*")
        if phase == "replaying":  # the eval's template and its first store exist
            running_and(lambda: _databases(tmp_path) >= 5)
        assert _processes_naming(str(base))
        child.send_signal(signal.SIGTERM)
        assert child.wait(60) == 128 + signal.SIGTERM
    finally:
        if child.poll() is None:
            child.kill()
        sink.close()
    assert _wait_for(lambda: not _processes_naming(str(base)), 30), (
        "the embedded PostgreSQL outlived the eval"
    )
    assert not base.exists()
