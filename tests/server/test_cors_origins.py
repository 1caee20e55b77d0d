"""LOCI_CORS_ORIGINS holds origins as a browser sends them (`Origin` is compared as written): one that
could never match is refused at start, naming the variable, instead of a server that never allows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidInput
from server.cli import main
from server.config import Settings

NEVER_MATCH = [
    "https://app.example.com/",  # a trailing slash
    "app.example.com",  # no scheme
    "https://app.example.com/ui",  # a path
    "HTTPS://App.Example.com",  # a browser sends lower case
    "https://user@app.example.com",
    "https://app.example.com:99999",
]


@pytest.mark.parametrize("origin", NEVER_MATCH)
def test_an_origin_that_could_never_match_is_refused(origin: str) -> None:
    with pytest.raises(InvalidInput, match="LOCI_CORS_ORIGINS"):
        Settings.from_env({"LOCI_EMBEDDER": "hash", "LOCI_CORS_ORIGINS": f"https://ok.example, {origin}"})


def test_the_command_stops_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    monkeypatch.setenv("LOCI_CORS_ORIGINS", "https://app.example.com/")
    assert main(["keys", "create", "--org", "acme", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: LOCI_CORS_ORIGINS") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "origins",
    ["*", "https://app.example.com", "http://localhost:5173, http://127.0.0.1:8080", "http://[::1]:3000"],
)
def test_origins_as_browsers_send_them_pass(origins: str) -> None:
    settings = Settings.from_env({"LOCI_EMBEDDER": "hash", "LOCI_CORS_ORIGINS": origins})
    assert settings.cors_origins == tuple(o.strip() for o in origins.split(","))
