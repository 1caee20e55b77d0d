"""create_app defaults: settings from the environment, the store opened from the data dir, the
embedder chosen by name and loaded lazily."""

from __future__ import annotations

from pathlib import Path

import pytest
import uvicorn
from litestar.testing import TestClient

from engine.errors import InvalidInput
from engine.keys import create_api_key
from engine.models import text_hash
from server.app import LazyEmbedder, create_app
from server.cli import main
from server.config import Settings


def test_settings_from_env() -> None:
    s = Settings.from_env(
        {
            "LOCI_DATA_DIR": "/srv/loci",
            "LOCI_RATE_LIMIT": "10/second",
            "LOCI_CORS_ORIGINS": "https://a.example, https://b.example,",
            "LOCI_EMBEDDER": "hash",
            "LOCI_IDEMPOTENCY_TTL_HOURS": "48",
        }
    )
    assert (s.data_dir, s.rate_limit, s.embedder, s.idempotency_ttl_hours) == (
        "/srv/loci",
        "10/second",
        "hash",
        48.0,
    )
    assert s.cors_origins == ("https://a.example", "https://b.example")
    assert s.store_target == "/srv/loci" and s.database_url is None
    d = Settings.from_env({})
    assert (d.data_dir, d.rate_limit, d.embedder, d.idempotency_ttl_hours, d.cors_origins) == (
        "./data",
        "600/minute",
        "minilm",
        24.0,
        (),
    )
    assert Settings.from_env({"LOCI_DATABASE_URL": "sqlite:///x.db"}).store_target == "sqlite:///x.db"


@pytest.mark.parametrize("hours", ["abc", "0", "-1", "nan", "inf", "1e308"])
def test_a_bad_idempotency_ttl_is_a_clear_error(hours: str) -> None:
    """LOCI_IDEMPOTENCY_TTL_HOURS=abc stopped `loci serve` with a traceback of float()."""
    with pytest.raises(InvalidInput, match="LOCI_IDEMPOTENCY_TTL_HOURS must be a number of hours > 0"):
        Settings.from_env({"LOCI_IDEMPOTENCY_TTL_HOURS": hours})
    assert Settings.from_env({"LOCI_IDEMPOTENCY_TTL_HOURS": " 0.5 "}).idempotency_ttl_hours == 0.5


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"LOCI_EMBEDDER": "minlm"}, "unknown embedder 'minlm'"),
        ({"LOCI_MINILM_RUNTIME": "onnx_fp32"}, "unknown minilm runtime 'onnx_fp32'"),
        ({"LOCI_RATE_LIMIT": "lots"}, "bad rate limit 'lots'"),
    ],
)
def test_a_setting_no_server_could_run_with_is_refused_at_start(
    env: dict[str, str],
    named: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not a server whose reads all fail while health says ok, nor a dev key printed before the error."""
    with pytest.raises(InvalidInput, match=named):
        Settings.from_env(env)
    for name in ("LOCI_EMBEDDER", "LOCI_MINILM_RUNTIME", "LOCI_RATE_LIMIT", "LOCI_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)  # the session's own: tests/conftest.py sets LOCI_EMBEDDER
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    def no_server(*args: object, **kwargs: object) -> None:
        raise AssertionError("the server started: the setting was let through")

    monkeypatch.setattr(uvicorn, "run", no_server)
    assert main(["serve", "--data-dir", str(tmp_path), "--port", "1"]) == 2
    out = capsys.readouterr()
    assert named in out.err and "loci_" not in out.out
    assert Settings.from_env({"LOCI_EMBEDDER": "hash", "LOCI_MINILM_RUNTIME": "whatever"}).embedder == "hash"


def test_a_store_path_that_cannot_be_made_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "create", "--org", "dev", "--database-url", "sqlite:////proc/no/such/dir/x.db"]) == 2
    assert "No such file or directory" in capsys.readouterr().err


def test_default_store_and_named_embedder(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=str(tmp_path), embedder="hash"))
    services = app.state.loci
    _, secret = create_api_key(services.store, "acme")
    with TestClient(app) as client:
        r = client.post(
            "/v0/memories",
            json={"type": "note", "text": "kept on disk"},
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert r.status_code == 200
    assert (tmp_path / "loci.db").exists()
    embedder = services.memories.embeddings.embedder
    assert isinstance(embedder, LazyEmbedder) and embedder.model.startswith("hash:")
    from engine.storage import open_store

    store = open_store(str(tmp_path))
    try:
        assert store.count_memories("acme") == 1
        assert store.get_embeddings(embedder.model, [text_hash("kept on disk")])
    finally:
        store.close()


def test_unknown_embedder_does_not_fail_writes(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=str(tmp_path), embedder="nope"))
    _, secret = create_api_key(app.state.loci.store, "acme")
    with TestClient(app) as client:
        r = client.post(
            "/v0/memories", json={"type": "note", "text": "x"}, headers={"Authorization": f"Bearer {secret}"}
        )
    assert r.status_code == 200
