"""The TypeScript client (clients/typescript, npm package `loci-client`): its types match the app's
OpenAPI document, its node tests pass against a real `loci serve`, and the package packs, installs from
the tarball and imports in a plain node script that runs the README's example (docs/examples/quickstart.ts).

Needs node and `npm ci` in clients/typescript (`make test` runs it); without them these tests skip."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integrations.conftest import LiveServer
from tests.integrations.typescript_types import ROOT, TS_DIR, TYPES, current_types

NODE = shutil.which("node")
NPM = shutil.which("npm")
INSTALLED = TS_DIR / "node_modules" / ".package-lock.json"
TSC = TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"
QUICKSTART = ROOT / "docs" / "examples" / "quickstart.ts"


def _missing() -> str | None:
    if NODE is None or NPM is None:
        return "needs node and npm for the TypeScript client (CI machines have node 20)"
    lock = TS_DIR / "package-lock.json"
    if not INSTALLED.exists() or INSTALLED.stat().st_mtime < lock.stat().st_mtime:
        return "clients/typescript/node_modules is missing or stale: `make test` runs `npm ci` there"
    return None


pytestmark = [pytest.mark.slow, pytest.mark.skipif(_missing() is not None, reason=_missing() or "")]


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _node() -> str:
    assert NODE is not None
    return NODE


def test_the_readmes_show_the_quickstart() -> None:
    example = QUICKSTART.read_text()
    code = f"```ts\n{example[example.index('import ') :]}```"
    assert code in (ROOT / "README.md").read_text()
    assert code in (TS_DIR / "README.md").read_text()


def test_committed_types_match_the_openapi_document() -> None:
    assert TYPES.read_text() == current_types(), (
        "clients/typescript/src/openapi.ts differs from the app's OpenAPI document: run `make ts-types` "
        "and commit the file"
    )


def test_node_tests_against_a_live_server(live: LiveServer) -> None:
    build = TS_DIR / "build"
    shutil.rmtree(build, ignore_errors=True)
    _run([_node(), str(TSC), "-p", "tsconfig.test.json"], cwd=TS_DIR)
    files = sorted(str(p) for p in (build / "test").glob("*.test.js"))
    assert len(files) >= 3, files
    env = {"LOCI_URL": live.url, "LOCI_API_KEY": live.key, "LOCI_READ_KEY": live.make_key(scopes=("read",))}
    out = _run([_node(), "--test", "--test-reporter=tap", *files], cwd=TS_DIR, env=env)
    counts = dict(re.findall(r"^# (pass|fail|skipped|skip|cancelled|todo) (\d+)$", out, flags=re.M))
    assert counts.get("fail") == "0" and counts.get("skip", counts.get("skipped")) == "0", out
    assert int(counts["pass"]) >= 15, out


def test_the_package_packs_installs_and_runs_the_quickstart(live: LiveServer, tmp_path: Path) -> None:
    assert NPM is not None
    packed = json.loads(_run([NPM, "pack", "--json", "--pack-destination", str(tmp_path)], cwd=TS_DIR))
    tarball = tmp_path / packed[0]["filename"]
    shipped = {f["path"] for f in packed[0]["files"]}
    assert {"package.json", "README.md", "dist/index.js", "dist/index.d.ts"} <= shipped
    assert not {p for p in shipped if p.startswith(("src/", "test/", "node_modules/"))}

    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}')
    _run([NPM, "install", "--offline", "--no-audit", "--no-fund", str(tarball)], cwd=app)
    (app / "check.js").write_text(
        'import { LociClient, NotFoundError } from "loci-client";\n'
        'console.log(typeof LociClient, typeof NotFoundError, new LociClient({ baseUrl: "http://x/" }).baseUrl);\n'
    )
    assert _run([_node(), "check.js"], cwd=app).split() == ["function", "function", "http://x"]

    # the README example type-checks against the declarations the tarball installed, then runs
    shutil.copy(QUICKSTART, app / "quickstart.ts")
    tsc_flags = ["--strict", "--module", "nodenext", "--target", "es2022", "--lib", "es2022,dom"]
    _run([_node(), str(TSC), *tsc_flags, "--outDir", "out", "quickstart.ts"], cwd=app)
    out = _run([_node(), "out/quickstart.js"], cwd=app, env={"LOCI_URL": live.url, "LOCI_API_KEY": live.key})
    assert "Alice prefers tea" in out and "Berlin" in out, out
