"""`loci bench scale` end to end at a tiny size: embedded PostgreSQL, bulk load, one real server worker.
No timing assertions (shared machine); it checks that every stage ran and reported sane counts."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from evals.bench import corpus, scale

pytestmark = pytest.mark.integration


def test_scale_memories_spread_over_entities_and_orgs() -> None:
    templates = corpus.memories(50)
    mems = scale.scale_memories(0, 40, templates, entities=4, orgs=2)
    assert [m.entity_id for m in mems[:5]] == [
        "ent:user-00000",
        "ent:user-00001",
        "ent:user-00002",
        "ent:user-00003",
        "ent:user-00000",
    ]
    # entity j belongs to org j mod 2, whatever the memory
    assert {(m.entity_id, m.org_id) for m in mems} == {
        ("ent:user-00000", "org_scale_000"),
        ("ent:user-00001", "org_scale_001"),
        ("ent:user-00002", "org_scale_000"),
        ("ent:user-00003", "org_scale_001"),
    }
    assert {m.text for m in mems} <= {t.text for t in templates}
    # facts about the corpus user are about the memory's entity
    assert all(m.subject != corpus.ENTITY for m in mems)
    assert scale.scale_memories(7, 8, templates, entities=4, orgs=2) == mems[7:8]  # deterministic per index


def test_bench_scale_tiny_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    scale.add_arguments(parser)
    args = parser.parse_args(
        [
            "--memories",
            "2000",
            "--entities",
            "10",
            "--orgs",
            "2",
            "--workers",
            "1",
            "--calls",
            "8",
            "--concurrency",
            "4,1",
            "--distinct-texts",
            "300",
            "--repeat",
            "2",
            "--embedder",
            "hash",
            "--batch",
            "700",
            "--cache-dir",
            str(tmp_path),
            "--out",
            str(tmp_path / "out.txt"),
        ]
    )
    assert scale.run_args(args, progress=io.StringIO()) == 0
    out = capsys.readouterr().out
    assert "load: 2000 memories, 10 entities, 2 orgs, 300 distinct texts (hash:256)" in out
    assert "memories/s per batch" in out
    # one server (1 worker), a row per concurrency (4 then 1, 8 calls each, 0 errors), twice
    rows = [line for line in out.splitlines() if line.startswith("1 | ")]
    assert [r[:13] for r in rows] == ["1 | 4 | 8 | 0", "1 | 1 | 8 | 0"] * 2, out
    assert "1 worker, concurrency 4, p95 over 2 runs: min " in out
    assert (tmp_path / "out.txt").read_text().strip() == out.strip()
