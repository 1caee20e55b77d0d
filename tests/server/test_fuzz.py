"""The fuzzers stay: schemathesis against a real `loci serve` (SQLite), with a read-write-admin key and
a read-only key. Every check runs (server errors, status codes, content types, headers, response
schemas, negative data rejected, positive data accepted, Allow, use after free, ...) over the coverage,
fuzzing and stateful phases, with a fixed seed and 25 cases per operation. Positive data may be refused
only by a rule the operation lists in `x-rules` (tests/server/fuzz_hooks.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.server.live_server import ROOT, LiveServer

SEED = 42
MAX_EXAMPLES = 25
RUN_TIMEOUT_S = 600


def run_schemathesis(server: LiveServer, key: str, report_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        server.url("/schema/openapi.json"),
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--seed",
        str(SEED),
        "-n",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--continue-on-failure",
        "--request-timeout",
        "20",
        "--no-color",
        "--generation-database",
        "none",
        "-H",
        f"Authorization: Bearer {key}",
        "--report",
        "ndjson",
        "--report-dir",
        str(report_dir),
    ]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.server.fuzz_hooks", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        command, cwd=report_dir.parent, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
    )


@pytest.mark.slow
@pytest.mark.parametrize("scopes", ["read,write,admin", "read"])
def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path: Path, scopes: str) -> None:
    with LiveServer(tmp_path) as server:
        done = run_schemathesis(server, server.key(scopes), tmp_path / "report")
    summary = done.stdout[done.stdout.find("SUMMARY") :] if "SUMMARY" in done.stdout else done.stdout[-3000:]
    assert done.returncode == 0, (
        f"schemathesis found problems:\n{done.stdout[-12000:]}\n{done.stderr[-2000:]}"
    )
    assert "passed" in summary and "generated" in summary, summary
    report = "".join(p.read_text() for p in (tmp_path / "report").glob("*.ndjson"))
    for check in ("not_a_server_error", "response_schema_conformance", "positive_data_accepted_or_ruled"):
        assert f'"name":"{check}"' in report, f"{check} did not run"
