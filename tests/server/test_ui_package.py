"""A non-editable install serves the inspector too: the wheel carries every file under server/ui/."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from server.routes.ui import UI_DIR

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_ships_the_ui(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("engine", "server", "evals"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("loci-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    wanted = {f"server/ui/{p.relative_to(UI_DIR).as_posix()}" for p in UI_DIR.rglob("*") if p.is_file()}
    assert wanted and wanted <= shipped, sorted(wanted - shipped)
