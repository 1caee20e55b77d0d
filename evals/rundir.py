"""Run directories: `evals/runs/<run-id>/` (git-ignored) with the config and the git revision inside.

check_runs_dir(out)  (InvalidInput when no run directory can be made under it)
new_run_dir(out, "locomo-balanced") -> Path  (evals/runs/20261122T052233Z-locomo-balanced)
git_revision() -> GitRevision(commit, dirty)
markdown_table(frame) -> str
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from engine.errors import InvalidInput

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUNS = REPO_ROOT / "evals" / "runs"


class GitRevision(msgspec.Struct, frozen=True, kw_only=True):
    commit: str | None
    dirty: bool | None


def git_revision(cwd: Path = REPO_ROOT) -> GitRevision:
    """The checked-out commit and whether the tree has changes (None when git is unavailable)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True, timeout=10
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return GitRevision(commit=None, dirty=None)
    return GitRevision(commit=commit or None, dirty=bool(status.strip()))


def run_id(label: str, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-")[:60] or "run"
    return f"{stamp}-{slug}"


def check_runs_dir(out: str | Path | None) -> None:
    """InvalidInput unless `new_run_dir` can make a directory under `out`: checked before the work, not after it."""
    base = Path(out) if out is not None else DEFAULT_RUNS
    existing = next(p for p in (base, *base.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise InvalidInput(f"--out {base}: {existing} is not a directory", field="out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InvalidInput(f"--out {base}: {existing} is not writable", field="out")


def new_run_dir(out: str | Path | None, label: str, *, name: str | None = None) -> Path:
    """A fresh directory under `out` (default evals/runs); a numeric suffix avoids collisions."""
    base = Path(out) if out is not None else DEFAULT_RUNS
    stem = name or run_id(label)
    path = base / stem
    n = 1
    while path.exists():
        n += 1
        path = base / f"{stem}-{n}"
    path.mkdir(parents=True)
    return path


def write_json(path: Path, value: Any) -> Path:
    path.write_bytes(msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n")
    return path


def markdown_table(frame: Any, floatfmt: str = ".3f") -> str:
    """A pandas DataFrame as a GitHub markdown table (index included)."""
    text: str = frame.to_markdown(floatfmt=floatfmt)
    return text
