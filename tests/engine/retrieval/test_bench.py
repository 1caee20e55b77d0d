from pathlib import Path

from engine.embed.hash import HashEmbedder
from engine.retrieval.bench import STAGES, corpus, requests, run_assemble_bench


def test_corpus_is_a_tenth_facts_and_distinct() -> None:
    mems = corpus(500)
    facts = sum(1 for m in mems if m.type == "fact")
    assert facts == 50
    assert len({m.text for m in mems}) == 500
    assert len({m.text for m in corpus(300, max_unique=100)}) == 100


def test_requests_vary() -> None:
    reqs = requests(20)
    assert len({r.turn for r in reqs}) == 20 and len({r.retrieval.preset for r in reqs}) > 1


def test_bench_table_smoke(tmp_path: Path) -> None:
    cache = str(tmp_path / "vectors.db")
    table = run_assemble_bench(sizes=(200,), calls=5, embedder=HashEmbedder(dim=32), vector_cache=cache)
    again = run_assemble_bench(sizes=(200,), calls=5, embedder=HashEmbedder(dim=32), vector_cache=cache)
    assert again.rows[0].distinct_texts == 200
    row = table.rows[0]
    assert row.size == 200 and row.calls == 5 and set(row.stages) == set(STAGES)
    assert row.stages["total"].p95 >= row.stages["total"].p50 > 0
    assert "p50 ms" in table.format()
