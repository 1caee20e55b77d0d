"""Run directories: `evals/runs/<run-id>/` (git-ignored) with the config and the git revision inside.

check_runs_dir(out)  (InvalidInput when no run directory can be made under it)
new_run_dir(out, "locomo-balanced") -> Path  (evals/runs/20261122T052233Z-locomo-balanced)
git_revision() -> GitRevision(commit, dirty)
dataset_sha256(dataset) -> str  (the replayed conversations and questions, as loaded)
run_settings() -> {"extract_budget_ms": 500.0, "env": {"LOCI_EXTRACTOR": "rules", ...}}
markdown_table(frame) -> str
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from engine.errors import InvalidInput
from engine.extract.rules import budget_from_env

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


#: settings read from the environment that change what a run measures (no secrets, no addresses)
RESULT_SETTINGS = (
    "LOCI_EXTRACTOR",
    "LOCI_EXTRACT_BUDGET_MS",
    "LOCI_EMBEDDER",
    "LOCI_EMBED_MODEL",
    "LOCI_EMBED_DIM",
    "LOCI_MINILM_RUNTIME",
    "LOCI_TORCH_THREADS",
    "LOCI_LLM_MODEL",
)


def dataset_sha256(dataset: msgspec.Struct) -> str:
    """A digest of the dataset as replayed, so two runs can be told apart when a file changed."""
    return hashlib.sha256(msgspec.json.encode(dataset)).hexdigest()


def run_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The extraction budget in force and every result-changing `LOCI_*` setting that was set."""
    env = os.environ if env is None else env
    return {
        "extract_budget_ms": budget_from_env(env),
        "env": {name: env[name] for name in RESULT_SETTINGS if name in env},
    }


def write_json(path: Path, value: Any) -> Path:
    path.write_bytes(msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n")
    return path


def markdown_table(frame: Any, floatfmt: str = ".3f") -> str:
    """A pandas DataFrame as a GitHub markdown table (index included)."""
    text: str = frame.to_markdown(floatfmt=floatfmt)
    return text
