"""With MiniLM (int8), a text has one vector whatever it was embedded with: a turn an assemble stores
(embedded in one call with the question) gets the vector a batch write gives the same text, so the
agent loop ranks what a batch replay ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from litestar.testing import TestClient

from engine.keys import create_api_key
from engine.models import text_hash
from engine.storage import open_store
from server.app import create_app
from server.config import Settings

pytestmark = pytest.mark.slow

TURN = "I went to the dentist on Tuesday and the appointment ran late, so I missed the train home."
OTHERS = [f"Note {i}: the garden needs watering" + " and weeding" * (i % 4) for i in range(12)]


def _stored_vector(data_dir: Path, text: str) -> np.ndarray:
    store = open_store(str(data_dir))
    try:
        model = next(iter(store.embedding_models()))
        found = store.get_embeddings(model, [text_hash(text)])
        return np.asarray(found[text_hash(text)], dtype=np.float32)
    finally:
        store.close()


def _serve(data_dir: Path, requests: list[tuple[str, dict[str, object]]]) -> None:
    app = create_app(Settings(data_dir=str(data_dir), embedder="minilm"))
    _, secret = create_api_key(app.state.loci.store, "acme")
    with TestClient(app) as client:
        for path, body in requests:
            r = client.post(path, json=body, headers={"Authorization": f"Bearer {secret}"})
            assert r.status_code == 200, r.text


def test_a_turn_stored_by_assemble_has_the_vector_a_batch_write_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCI_MODEL_CACHE", str(tmp_path / "models"))  # one graph for both servers
    loop, batch = tmp_path / "loop", tmp_path / "batch"
    # with a goal the query differs from the turn: both are embedded in one call
    _serve(loop, [("/v0/context/assemble", {"entity_id": "ent:a", "turn": TURN, "goal": "plan the week"})])
    items = [{"type": "event", "text": t, "entity_id": "ent:a"} for t in [*OTHERS[:6], TURN, *OTHERS[6:]]]
    _serve(batch, [("/v0/memories", {"items": items})])
    np.testing.assert_array_equal(_stored_vector(loop, TURN), _stored_vector(batch, TURN))
