"""The import rules of the house: dependencies run one way.

server -> engine, evals -> engine, and evals -> server only to replay through the app. engine knows no
server, no harness, and (outside engine/storage) no database driver, web framework or concrete store;
serving never loads the harness. The client (loci.client) and the records it shares with the server
(loci.wire) import nothing of the server, so its distribution ships without it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONCRETE_STORES = ("engine.storage.sqlite", "engine.storage.postgres", "engine.storage.in_memory")
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool", "litestar", "uvicorn")
#: evals modules that may import server: replays of a dataset through the served app
EVALS_USING_SERVER = {"evals/local_api.py"}


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _under(names: set[str], prefixes: tuple[str, ...]) -> set[str]:
    return {n for n in names if any(n == p or n.startswith(p + ".") for p in prefixes)}


def _files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def test_the_checker_sees_nested_and_from_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import os\ndef f():\n    from server.app import create_app\n    import psycopg.sql\n")
    assert _under(_imports(probe), ("server", "psycopg")) == {
        "server.app",
        "server.app.create_app",
        "psycopg.sql",
    }
    assert _under(_imports(probe, top_level_only=True), ("server",)) == set()


def test_engine_imports_neither_server_nor_evals() -> None:
    bad = {str(p.relative_to(ROOT)): _under(_imports(p), ("server", "evals")) for p in _files("engine")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_engine_outside_storage_knows_no_driver_framework_or_concrete_store() -> None:
    bad = {}
    for p in _files("engine"):
        if (ROOT / "engine" / "storage") in p.parents:
            continue
        found = _under(_imports(p), DRIVERS + CONCRETE_STORES)
        if found:
            bad[str(p.relative_to(ROOT))] = found
    assert bad == {}


def test_the_client_and_its_records_import_only_httpx_msgspec_and_the_standard_library() -> None:
    allowed = {"loci", "httpx", "msgspec", *sys.stdlib_module_names}
    bad = {}
    for folder in ("loci/client", "loci/wire"):
        for p in _files(folder):
            found = {name for name in _imports(p) if name.split(".")[0] not in allowed}
            if found:
                bad[str(p.relative_to(ROOT))] = found
    assert bad == {}


def test_server_imports_the_harness_only_lazily() -> None:
    bad = {
        str(p.relative_to(ROOT)): _under(_imports(p, top_level_only=True), ("evals",))
        for p in _files("server")
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_evals_use_the_server_only_to_replay_through_the_app() -> None:
    users = {str(p.relative_to(ROOT)) for p in _files("evals") if _under(_imports(p), ("server",))}
    assert users <= EVALS_USING_SERVER


def test_serving_does_not_load_the_harness() -> None:
    code = (
        "import sys\n"
        "import server.app, server.asgi, server.cli\n"
        "server.cli.build_parser()\n"
        "loaded = sorted(m for m in sys.modules if m == 'evals' or m.startswith('evals.'))\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
