"""`make lab`: JupyterLab starts on the notebooks folder and serves a jupytext .py file as a notebook."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "notebooks" / "jupyter_lab_config.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    port, token = _free_port(), secrets.token_hex(8)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path_factory.mktemp("jupyter-runtime"))}
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--config={CONFIG}",
        "--ip=127.0.0.1",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"jupyter lab exited: {proc.stderr.read().decode() if proc.stderr else ''}"
                )
            try:
                if httpx.get(f"{base}/api/status", params={"token": token}, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("jupyter lab did not answer within 120 s")
            time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_lab_serves_a_py_notebook_as_a_notebook(lab: tuple[str, str]) -> None:
    base, token = lab
    r = httpx.get(
        f"{base}/api/contents/01_quickstart.py", params={"type": "notebook", "token": token}, timeout=30
    )
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["type"] == "notebook"
    cells = doc["content"]["cells"]
    assert cells[0]["cell_type"] == "markdown" and "Quickstart" in "".join(cells[0]["source"])
    assert any("parameters" in c["metadata"].get("tags", []) for c in cells)


def test_lab_opens_python_files_with_the_jupytext_notebook_viewer(lab: tuple[str, str]) -> None:
    base, token = lab
    page = httpx.get(f"{base}/lab", params={"token": token}, timeout=30)
    assert page.status_code == 200 and "JupyterLab" in page.text
    r = httpx.get(
        f"{base}/lab/api/settings/@jupyterlab/docmanager-extension:plugin",
        params={"token": token},
        timeout=30,
    )
    assert r.status_code == 200
    assert r.json()["schema"]["properties"]["defaultViewers"]["default"]["python"] == "Jupytext Notebook"
