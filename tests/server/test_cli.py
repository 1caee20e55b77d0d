"""The `loci` command: keys create/list/revoke on the serve database, and serve's first-run key."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest

from engine.keys import hash_key
from engine.storage import open_store
from server.cli import build_parser, main
from server.commands import COMMANDS
from server.commands.serve import DEV_ORG, ensure_dev_key


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_keys_create_prints_key_on_last_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = run(
        capsys,
        "keys",
        "create",
        "--org",
        "acme",
        "--scopes",
        "read,write",
        "--name",
        "ci",
        "--data-dir",
        str(tmp_path),
    )
    assert code == 0
    secret = out.rstrip("\n").splitlines()[-1]
    assert secret.startswith("loci_") and secret.strip() == secret
    store = open_store(str(tmp_path))  # the database `loci serve --data-dir` uses
    try:
        key = store.find_api_key(hash_key(secret))
        assert (
            key is not None and key.org_id == "acme" and key.scopes == ["read", "write"] and key.name == "ci"
        )
    finally:
        store.close()


def test_keys_list_never_prints_secrets_and_revoke(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, out = run(capsys, "keys", "create", "--org", "acme", "--data-dir", str(tmp_path))
    secret = out.splitlines()[-1]
    run(capsys, "keys", "create", "--org", "other", "--data-dir", str(tmp_path))
    code, listing = run(capsys, "keys", "list", "--data-dir", str(tmp_path))
    assert code == 0 and "acme" in listing and "other" in listing
    assert secret not in listing and hash_key(secret) not in listing
    _, only = run(capsys, "keys", "list", "--org", "acme", "--data-dir", str(tmp_path))
    assert "other" not in only
    key_id = next(line.split()[0] for line in only.splitlines() if line.startswith("key_"))
    code, out = run(capsys, "keys", "revoke", key_id, "--data-dir", str(tmp_path))
    assert code == 0 and key_id in out
    _, after = run(capsys, "keys", "list", "--org", "acme", "--data-dir", str(tmp_path))
    assert "revoked" in after
    code, again = run(capsys, "keys", "revoke", key_id, "--data-dir", str(tmp_path))
    assert code == 0 and again.startswith(f"{key_id} was already revoked at ")
    assert main(["keys", "revoke", "key_nope", "--data-dir", str(tmp_path)]) == 1
    assert "no such key key_nope" in capsys.readouterr().err


def test_data_dir_from_env(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCI_DATA_DIR", str(tmp_path / "envdir"))
    run(capsys, "keys", "create", "--org", "acme")
    assert (tmp_path / "envdir" / "loci.db").exists()


def test_bad_scopes_fail_cleanly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["keys", "create", "--org", "acme", "--scopes", "root", "--data-dir", str(tmp_path)]) == 2
    assert "scopes" in capsys.readouterr().err


def test_first_run_creates_dev_key_once(tmp_path: Path) -> None:
    store = open_store(str(tmp_path))
    try:
        out = io.StringIO()
        secret = ensure_dev_key(store, out)
        assert secret is not None and secret in out.getvalue()
        key = store.find_api_key(hash_key(secret))
        assert key is not None and key.org_id == DEV_ORG and key.scopes == ["read", "write", "admin"]
        again = io.StringIO()
        assert ensure_dev_key(store, again) is None and again.getvalue() == ""
        assert len(store.list_api_keys()) == 1
    finally:
        store.close()


def test_parser_knows_every_registered_command() -> None:
    parser = build_parser()
    args = parser.parse_args(["serve", "--host", "0.0.0.0", "--port", "9000", "--data-dir", "/tmp/x"])
    assert (args.host, args.port, args.data_dir) == ("0.0.0.0", 9000, "/tmp/x")
    assert set(COMMANDS) >= {"serve", "keys"}


def test_doctor_embeds_memories_stored_without_a_vector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.storage import open_store
    from tests.factories import memory

    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    store = open_store(str(tmp_path))
    store.put_memories([memory(memory_id=f"mem_{i}", text=f"note {i}") for i in range(3)])
    store.close()
    assert main(["doctor", "--check", "--data-dir", str(tmp_path)]) == 1
    assert "memories without a vector for hash:256: 3" in capsys.readouterr().out
    assert main(["doctor", "--data-dir", str(tmp_path)]) == 0
    assert "embedded 3 texts" in capsys.readouterr().out
    assert main(["doctor", "--check", "--data-dir", str(tmp_path)]) == 0


def test_doctor_counts_and_fills_long_texts_without_their_passages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.embed.hash import HashEmbedder
    from engine.models import text_hash
    from engine.storage import open_store
    from tests.factories import memory

    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    long = " ".join(f"Sentence {i} of a long note says something about the garden." for i in range(12))
    store = open_store(str(tmp_path))
    store.put_memories([memory(memory_id="mem_long", text=long)])
    embedder = HashEmbedder()
    store.put_embeddings(embedder.model, {text_hash(long): embedder.embed([long])[0]})  # no passages
    store.close()
    assert main(["doctor", "--check", "--data-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "memories without a vector for hash:256: 0" in out
    assert "long memory texts without their passages' vectors: 1" in out
    assert main(["doctor", "--data-dir", str(tmp_path)]) == 0
    assert "long texts given their passages' vectors: 1" in capsys.readouterr().out
    assert main(["doctor", "--check", "--data-dir", str(tmp_path)]) == 0


READ_ONLY = (
    ["doctor", "--check"],
    ["doctor"],
    ["keys", "list"],
    ["keys", "revoke", "key_x"],
    ["export", "--org", "acme", "--out", "-"],
)


@pytest.mark.parametrize("command", READ_ONLY, ids=" ".join)
@pytest.mark.parametrize("where", ["--data-dir", "--database-url"])
def test_a_command_that_reads_a_store_refuses_one_that_does_not_exist(
    command: list[str],
    where: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A mistyped --data-dir made an empty loci.db there, and `doctor --check` found it whole (exit 0)."""
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    missing = tmp_path / "typo"
    target = str(missing) if where == "--data-dir" else f"sqlite://{missing / 'loci.db'}"
    assert main([*command, where, target]) == 2
    err = capsys.readouterr().err
    assert f"error: no Loci database at {target}" in err and "Traceback" not in err
    assert not missing.exists()


def test_a_file_that_is_not_a_database_is_refused_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database, but long enough for sqlite to read a header from it " * 2)
    assert main(["keys", "list", "--database-url", f"sqlite://{notes}"]) == 2
    assert f"error: no Loci database at sqlite://{notes}: " in capsys.readouterr().err


def test_the_commands_that_write_still_create_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--org", "acme", "--data-dir", str(tmp_path / "new")]) == 0
    assert (tmp_path / "new" / "loci.db").exists()
    for command in READ_ONLY[2:4]:  # and what reads it then finds it
        assert main([*command, "--data-dir", str(tmp_path / "new")]) in (0, 1)
    assert main(["migrate", "--data-dir", str(tmp_path / "migrated")]) == 0
    assert (tmp_path / "migrated" / "loci.db").exists()


def test_eval_help_names_every_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    """`loci eval run --help` left out longmemeval-s-dev and synthetic-mixed."""
    from evals.loaders import dataset_names

    with pytest.raises(SystemExit):
        main(["eval", "run", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert all(name in shown for name in dataset_names()), shown


@pytest.mark.parametrize("port", ["70000", "65536", "-1", "http"])
def test_serve_refuses_a_port_out_of_range(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 70000 was taken and wrapped around to port 4464, while the banner said 70000
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["serve", "--port", port])
    assert exit_info.value.code == 2
    assert "--port" in capsys.readouterr().err
    assert build_parser().parse_args(["serve", "--port", "65535"]).port == 65535


@pytest.mark.parametrize("target", ["notes", "directory"])
@pytest.mark.parametrize(
    "command", [["serve", "--port", "0"], ["migrate"], ["keys", "create", "--org", "acme"], ["import"]]
)
def test_a_sqlite_target_that_is_no_database_fails_in_one_line(
    target: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # these commands create a missing store, so they open what is there: it raised sqlite3's error
    path = tmp_path / target
    if target == "directory":
        path.mkdir()
    else:
        path.write_text("my notes, not a database\n")
    dump = tmp_path / "empty.jsonl"
    dump.write_text("")
    extra = ["--in", str(dump)] if command == ["import"] else []
    assert main([*command, *extra, "--database-url", f"sqlite:///{path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and str(path) in err, err


def test_an_unreachable_postgresql_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    # psycopg's message holds a line break and a tab ("\n\tIs the server running on that host ...")
    assert main(["keys", "list", "--database-url", "postgresql://loci:pw@127.0.0.1:1/loci"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot reach PostgreSQL") and err.count("\n") == 1, err
    assert "pw" not in err


@pytest.mark.parametrize("org", [" acme", "acme ", "acme\n", "ac\tme"])
def test_keys_create_refuses_an_org_with_edge_spaces_or_control_characters(
    org: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "acme " made a key of an org apart from "acme", which saw none of its data
    assert main(["keys", "create", "--org", org, "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: org must not") and err.count("\n") == 1, err
    store = open_store(str(tmp_path))
    try:
        assert store.list_api_keys() == []
    finally:
        store.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "no-such-host.invalid"])
def test_serve_says_in_one_line_when_it_cannot_listen(
    host: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the banner said "Loci listening on ..." and uvicorn's error came after it (exit 3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--host", host, "--port", str(port), "--data-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert "listening" not in out
    assert err.startswith(f"error: cannot listen on {host}:{port}") and err.count("\n") == 1, err
