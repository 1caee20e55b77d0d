"""A place or secret in the environment with a space or line break at an edge (an env file with CRLF
lines, a pasted value) is refused at start, naming the variable; it opened another database
("loci.db\\r" beside loci.db) or a token no scrape matched."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidInput
from server.cli import main
from server.config import Settings


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("LOCI_DATABASE_URL", "sqlite:///srv/loci.db\r"),
        ("LOCI_DATABASE_URL", " postgresql://loci@db/loci"),
        ("LOCI_DATA_DIR", "/srv/loci "),
        ("LOCI_METRICS_TOKEN", "scrape-token\n"),
    ],
)
def test_a_padded_value_is_refused(name: str, value: str) -> None:
    with pytest.raises(InvalidInput, match=name):
        Settings.from_env({"LOCI_EMBEDDER": "hash", name: value})


def test_no_database_is_made_under_the_padded_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    monkeypatch.setenv("LOCI_DATABASE_URL", f"sqlite:///{tmp_path}/loci.db\r")
    assert main(["keys", "create", "--org", "acme"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: LOCI_DATABASE_URL") and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []
