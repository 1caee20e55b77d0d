"""The light client distribution (clients/python, `loci-client`): its wheel holds `loci.client` and
`loci.wire` only and depends on httpx and msgspec only; it installs into a clean virtual environment
without torch, faiss, onnxruntime or litestar, and runs the README's SDK example against a real server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.integrations.conftest import LiveServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "sdk_quickstart.py"
#: what the server's distribution brings and the client's must not
HEAVY = ("torch", "faiss-cpu", "onnxruntime", "sentence-transformers", "litestar", "uvicorn", "numpy", "loci")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    env = {**_clean_env(), **(env or {})}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _clean_env() -> dict[str, str]:
    """This environment without what would let the repository's packages leak in."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the files it takes, so the build writes nothing into the repository."""
    out = tmp_path_factory.mktemp("wheel")
    project = out / "clients" / "python"
    shutil.copytree(
        ROOT / "clients" / "python", project, ignore=shutil.ignore_patterns("build", "*.egg-info")
    )
    shutil.copytree(ROOT / "loci", out / "loci", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    _run([*pip, str(project), "-w", str(out)], cwd=out)
    return next(out.glob("loci_client-*.whl"))


@pytest.fixture(scope="module")
def client_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh virtual environment with the wheel installed (its dependencies from the index)."""
    home = tmp_path_factory.mktemp("client-venv")
    _run([sys.executable, "-m", "venv", "--without-pip", str(home / "venv")], cwd=home)  # this pip installs
    python = home / "venv" / "bin" / "python"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "-q",
        "--disable-pip-version-check",
    ]
    _run([*pip, str(wheel)], cwd=home)
    return python


def test_the_package_readme_shows_the_sdk_quickstart() -> None:
    example = EXAMPLE.read_text()
    assert (
        f"```python\n{example[example.index('from ') :]}```"
        in (ROOT / "clients/python/README.md").read_text()
    )


def test_the_wheel_holds_the_client_and_its_records_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        folders = {name.rsplit("/", 1)[0] for name in z.namelist() if name.endswith(".py")}
        metadata = next(z.read(n).decode() for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    assert folders == {"loci", "loci/client", "loci/wire"}
    requires = sorted(
        line.split(":", 1)[1].split(">")[0].strip()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:")
    )
    assert requires == ["httpx", "msgspec"]


def test_the_client_installs_without_the_server(client_python: Path, tmp_path: Path) -> None:
    code = (
        "import importlib.metadata, importlib.util, sys, loci.client, loci.wire\n"
        "print(' '.join(sorted(d.metadata['Name'].lower() for d in importlib.metadata.distributions())))\n"
        "print(loci.client.__file__.startswith(sys.prefix), importlib.util.find_spec('engine'), "
        "importlib.util.find_spec('server'))\n"
    )
    installed, where = _run([str(client_python), "-c", code], cwd=tmp_path).splitlines()
    assert "loci-client" in installed.split()
    assert not set(HEAVY) & set(installed.split()), installed
    assert where == "True None None"


def test_the_sdk_quickstart_runs_from_the_wheel(
    client_python: Path, live: LiveServer, tmp_path: Path
) -> None:
    env = {"LOCI_URL": live.url, "LOCI_API_KEY": live.key}  # what the example reads
    out = _run([str(client_python), "-c", EXAMPLE.read_text()], cwd=tmp_path, env=env)
    assert "Alice prefers tea" in out and "Berlin" in out, out
