"""`loci export`, `loci import` and `loci migrate` through the command line."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import msgspec
import pytest

from engine.storage import open_store
from engine.storage.postgres.schema import LATEST_VERSION
from engine.storage.sqlite.schema import LATEST as SQLITE_LATEST
from engine.storage.transfer import Counts, HeaderLine
from server.cli import build_parser, main
from tests.engine.storage.transfer_data import MODEL, ORG, T0, fill, snapshot
from tests.pg_fixture import PgServer, create_database, drop_database, pg_database, pg_server

__all__ = ["pg_database", "pg_server"]  # fixtures used by name below


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_commands_are_registered_once() -> None:
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    choices = subparsers._group_actions[0].choices
    assert choices is not None and {"export", "import", "migrate"} <= set(choices)


def test_export_file_then_import_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = open_store(str(tmp_path / "src"))
    fill(src)
    src.close()
    out = tmp_path / "acme.jsonl"
    code, _, err = run(
        capsys,
        "export",
        "--org",
        ORG,
        "--out",
        str(out),
        "--with-keys",
        "--model",
        MODEL,
        "--data-dir",
        str(tmp_path / "src"),
    )
    assert code == 0 and "10 memories, 8 vectors (hash:16), 3 events, 2 api keys" in err
    header = msgspec.json.decode(out.read_bytes().splitlines()[0], type=HeaderLine)
    assert header.counts.memories == 10 and header.with_keys
    for attempt in range(2):
        code, text, _ = run(capsys, "import", "--in", str(out), "--data-dir", str(tmp_path / "dst"))
        assert code == 0 and "imported into org 'acme'" in text
        # the second run finds every vector held: the count says so instead of a bare 0
        written, held = (8, 0) if attempt == 0 else (0, 8)
        assert f"{written} vectors ({held} more the store held already" in text
    a, b = open_store(str(tmp_path / "src")), open_store(str(tmp_path / "dst"))
    try:
        assert snapshot(b) == snapshot(a) and b.count_memories() == 10
    finally:
        a.close()
        b.close()
    assert "events (3 already present)" in text
    assert "0 memories (10 kept as the target has them, 0 it deleted left deleted)" in text


def test_export_to_stdout_without_keys_or_vectors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = open_store(str(tmp_path))
    fill(src)
    src.close()
    buffer = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(buffer))
    assert main(["export", "--org", ORG, "--no-with-vectors", "--data-dir", str(tmp_path)]) == 0
    sys.stdout.flush()
    lines = buffer.getvalue().splitlines()
    header = msgspec.json.decode(lines[0], type=HeaderLine)
    assert (header.counts.embeddings, header.counts.api_keys, len(lines)) == (0, 0, 1 + 10 + 3)


def test_import_of_a_bad_file_fails_cleanly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"memory"}\n')
    code, _, err = run(capsys, "import", "--in", str(bad), "--data-dir", str(tmp_path / "d"))
    assert code == 2 and "error: line 1" in err
    header = HeaderLine(org_id=ORG, exported_at=T0, counts=Counts(embeddings=1))
    vector = {"kind": "embedding", "model": MODEL, "text_hash": "x", "dim": 1, "vector": "!!!notbase64"}
    bad.write_bytes(msgspec.json.encode(header) + b"\n" + msgspec.json.encode(vector) + b"\n")
    code, _, err = run(capsys, "import", "--in", str(bad), "--data-dir", str(tmp_path / "d"))
    assert code == 2 and "error: line 2: vector is not base64" in err


@pytest.mark.parametrize("kind", ["missing", "directory", "unreadable"])
def test_an_import_of_an_input_it_cannot_read_creates_no_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    """`loci import --in missing.jsonl` made the data dir and an empty loci.db before failing."""
    source = tmp_path / "in.jsonl"
    if kind == "directory":
        source.mkdir()
    elif kind == "unreadable":
        if os.geteuid() == 0:
            pytest.skip("root reads a file whatever its mode")
        source.write_text("{}\n")
        source.chmod(0)
    data = tmp_path / "d"
    code, out, err = run(capsys, "import", "--in", str(source), "--data-dir", str(data))
    assert code == 2 and out == "" and err.startswith(f"error: cannot read --in {source}: ")
    assert len(err.splitlines()) == 1 and not data.exists()


def test_a_negative_batch_size_is_refused_before_the_store_is_made(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`loci import --batch-size -3` was taken, as one transaction of one-record batches."""
    src = open_store(str(tmp_path / "src"))
    fill(src)
    src.close()
    out = tmp_path / "acme.jsonl"
    assert run(capsys, "export", "--org", ORG, "--out", str(out), "--data-dir", str(tmp_path / "src"))[0] == 0
    for bad in ("-3", "-1", "x"):
        with pytest.raises(SystemExit) as exc:
            main(["import", "--in", str(out), "--batch-size", bad, "--data-dir", str(tmp_path / "dst")])
        assert exc.value.code == 2
        assert "error: argument --batch-size: " in capsys.readouterr().err
    assert not (tmp_path / "dst").exists()
    # 0 stays the documented whole-file transaction
    code, text, _ = run(
        capsys, "import", "--in", str(out), "--batch-size", "0", "--data-dir", str(tmp_path / "dst")
    )
    assert code == 0 and "in 1 batches" in text


def test_import_of_a_file_cut_before_its_events_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The memories and vectors ahead of the cut were committed (default --batch-size) before the
    counts said the file was short: a superseded fact stayed without its event."""
    src = open_store(str(tmp_path / "src"))
    fill(src)
    src.close()
    out = tmp_path / "acme.jsonl"
    assert run(capsys, "export", "--org", ORG, "--out", str(out), "--data-dir", str(tmp_path / "src"))[0] == 0
    lines = out.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: next(i for i, x in enumerate(lines) if b'"kind":"event"' in x)]))
    code, _, err = run(capsys, "import", "--in", str(cut), "--data-dir", str(tmp_path / "dst"))
    assert code == 2 and "but its header says" in err
    dst = open_store(str(tmp_path / "dst"))
    try:
        assert dst.org_ids() == [] and dst.embedding_models() == []
    finally:
        dst.close()


def test_migrate_sqlite_is_repeatable(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    v = SQLITE_LATEST
    code, out, _ = run(capsys, "migrate", "--data-dir", str(tmp_path))
    assert code == 0 and f"schema version {v} (before 0, latest {v}); migrated 0 -> {v}" in out
    code, out, _ = run(capsys, "migrate", "--database-url", f"sqlite://{tmp_path / 'loci.db'}")
    assert code == 0 and f"schema version {v} (before {v}, latest {v}); up to date" in out
    # four slashes name the absolute path too, as every other command reads them
    code, out, _ = run(capsys, "migrate", "--database-url", f"sqlite:///{tmp_path / 'loci.db'}")
    assert code == 0 and f"schema version {v} (before {v}, latest {v}); up to date" in out


def test_a_data_dir_on_the_command_line_beats_the_environments_url(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loci export --data-dir D` exported the store of LOCI_DATABASE_URL instead of D's."""
    src = open_store(str(tmp_path / "src"))
    fill(src)
    src.close()
    monkeypatch.setenv("LOCI_DATABASE_URL", f"sqlite://{tmp_path / 'src' / 'loci.db'}")
    out = tmp_path / "out.jsonl"
    code, _, err = run(
        capsys, "export", "--org", ORG, "--out", str(out), "--data-dir", str(tmp_path / "empty")
    )
    assert code == 2 and f"no Loci database at {tmp_path / 'empty'}" in err
    assert not out.exists() and not (tmp_path / "empty").exists()


def test_an_export_of_an_org_the_store_lacks_is_an_error_naming_the_orgs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`loci export --org Dev` wrote an empty export and exited 0."""
    src = open_store(str(tmp_path))
    fill(src)
    src.close()
    out = tmp_path / "dev.jsonl"
    code, _, err = run(capsys, "export", "--org", "Dev", "--out", str(out), "--data-dir", str(tmp_path))
    assert (
        code == 2
        and "error: org 'Dev' has no records in this store; the orgs it holds: 'acme', 'other'" in err
    )
    assert not out.exists()


def test_an_export_of_an_unknown_model_is_an_error_naming_the_known_ones(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`loci export --model bogus` wrote an export with 0 vectors and exited 0."""
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    src = open_store(str(tmp_path))
    fill(src)
    src.close()
    out = tmp_path / "acme.jsonl"
    argv = ["export", "--org", ORG, "--out", str(out), "--data-dir", str(tmp_path)]
    code, _, err = run(capsys, *argv, "--model", MODEL, "--model", "bogus")
    assert code == 2 and err == f"error: unknown embedding model 'bogus'; valid: {MODEL}, hash:256\n"
    assert not out.exists() and not list(tmp_path.glob("acme.jsonl*"))
    # the configured embedder's model is known, though the store holds no vector of it
    code, _, err = run(capsys, *argv, "--model", "hash:256")
    assert code == 0 and "0 vectors (hash:256)" in err


def test_migrate_never_prints_a_password() -> None:
    from server.commands import display_target

    assert (
        display_target("postgresql://loci:s3cret@db.example:5432/loci?sslmode=require&password=x")
        == "postgresql://db.example:5432/loci"
    )
    assert display_target("/var/lib/loci") == "/var/lib/loci"


@pytest.mark.integration
def test_migrate_postgres_is_repeatable(capsys: pytest.CaptureFixture[str], pg_server: PgServer) -> None:
    name = f"{pg_server.prefix}_migrate_cli"
    url = create_database(pg_server, name)  # empty: no schema yet
    try:
        code, out, _ = run(capsys, "migrate", "--database-url", url)
        v = LATEST_VERSION
        assert code == 0 and f"schema version {v} (before 0, latest {v}); migrated 0 -> {v}" in out
        code, out, _ = run(capsys, "migrate", "--database-url", url)
        assert code == 0 and f"(before {v}, latest {v}); up to date" in out
    finally:
        drop_database(pg_server, name)


@pytest.mark.integration
def test_a_postgres_database_without_the_schema_is_refused_by_a_read(
    capsys: pytest.CaptureFixture[str], pg_server: PgServer
) -> None:
    from engine.storage.schema_info import schema_version

    name = f"{pg_server.prefix}_read_empty"
    url = create_database(pg_server, name)  # reachable, but no Loci schema: the wrong database
    try:
        code, _, err = run(capsys, "export", "--org", ORG, "--out", "-", "--database-url", url)
        assert code == 2 and "error: no Loci database at postgresql://" in err
        assert schema_version(url) == 0  # nothing migrated into it
    finally:
        drop_database(pg_server, name)


@pytest.mark.integration
def test_export_sqlite_import_postgres_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, pg_database: str
) -> None:
    src = open_store(str(tmp_path))
    fill(src)
    src.close()
    out = tmp_path / "acme.jsonl"
    assert (
        run(
            capsys,
            "export",
            "--org",
            ORG,
            "--out",
            str(out),
            "--model",
            MODEL,
            "--with-keys",
            "--data-dir",
            str(tmp_path),
        )[0]
        == 0
    )
    assert run(capsys, "import", "--in", str(out), "--database-url", pg_database)[0] == 0
    back = tmp_path / "back.jsonl"
    assert (
        run(
            capsys,
            "export",
            "--org",
            ORG,
            "--out",
            str(back),
            "--model",
            MODEL,
            "--with-keys",
            "--database-url",
            pg_database,
        )[0]
        == 0
    )
    assert back.read_bytes().splitlines()[1:] == out.read_bytes().splitlines()[1:]  # all but exported_at


@pytest.mark.integration
def test_migrate_postgres_backfills_inline_vectors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, pg_database: str
) -> None:
    """Rows written without inline copies (as before schema migration 3) get them from `loci migrate`,
    in batches, for the configured embedder's model; a second run finds nothing to do."""
    import numpy as np

    from engine.embed.registry import create_embedder
    from engine.models import text_hash
    from engine.storage.postgres import PostgresStore
    from tests.engine.storage.conftest import T0
    from tests.factories import memory

    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    model = create_embedder("hash").model
    plain = PostgresStore(pg_database, max_size=1)  # no inline model: rows without copies
    mems = [
        memory(memory_id=f"mem_{i}", org_id=f"org_{i % 2}", text=f"text {i}", at=T0, entity_id="ent:x")
        for i in range(5)
    ]
    plain.put_embeddings(model, {text_hash(m.text): np.ones(8, dtype=np.float32) for m in mems[:4]})
    plain.put_embeddings("other", {text_hash(m.text): np.ones(8, dtype=np.float32) for m in mems})
    plain.put_memories(mems)
    monkeypatch.setattr(PostgresStore.backfill_inline_vectors, "__defaults__", (2,))  # several batches
    try:
        code, out, _ = run(capsys, "migrate", "--database-url", pg_database)
        assert code == 0 and f"inline vectors ({model}): 4 rows given a copy" in out
        code, out, _ = run(capsys, "migrate", "--database-url", pg_database)
        assert code == 0 and f"inline vectors ({model}): 0 rows given a copy" in out
        with plain._conn() as conn:
            rows = dict(
                conn.execute(
                    "SELECT memory_id, embedding_model FROM memories WHERE embedding IS NOT NULL"
                ).fetchall()
            )
        assert rows == {f"mem_{i}": model for i in range(4)}
    finally:
        plain.close()
