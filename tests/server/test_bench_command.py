"""`loci bench assemble|ingest` at tiny sizes with the hash embedder: table shape, not timings."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.embed.registry import create_embedder
from engine.models import text_hash
from engine.retrieval.responses import StageTimings
from evals.bench import corpus
from evals.bench.assemble import AssembleRow, stage_ms, verdict
from evals.bench.harness import Pct, pct
from evals.bench.vectors import VectorCache, standin
from server.cli import main


def table_rows(out: str, first_col: str) -> tuple[list[str], list[list[str]]]:
    """Header and body rows of the markdown-ish table whose header starts with `first_col`."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{first_col} | "))
    header = lines[start].split(" | ")
    body = []
    for line in lines[start + 2 :]:
        if " | " not in line:
            break
        body.append(line.split(" | "))
    return header, body


def numbers(cell: str) -> list[float]:
    return [float(x) for x in cell.split("/")]


def test_bench_assemble_prints_a_row_per_size_with_stages_and_http(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "bench.txt"
    code = main(
        [
            "bench",
            "assemble",
            "--sizes",
            "120,200",
            "--calls",
            "5",
            "--embedder",
            "hash",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--out",
            str(out_file),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    header, rows = table_rows(out, "size")
    assert header == [
        "size",
        "calls",
        "p50 ms",
        "p95 ms",
        "embed p50/p95",
        "channels p50/p95",
        "fuse p50/p95",
        "expand p50/p95",
        "budget p50/p95",
        "render p50/p95",
        "other p50/p95",
        "http p50 ms",
        "http p95 ms",
        "target (p50/p95)",
    ]
    assert [r[0] for r in rows] == ["120", "200"] and all(r[1] == "5" for r in rows)
    for row in rows:
        assert len(row) == len(header)
        p50, p95 = float(row[2]), float(row[3])
        assert 0 < p50 <= p95
        for cell in row[4:11]:
            lo, hi = numbers(cell)
            assert 0 <= lo <= hi
        assert 0 < float(row[11]) <= float(row[12])  # http ran against a real server
        assert row[13] == "-"  # no target at these sizes
    assert "$ loci bench assemble --sizes 120,200 --calls 5 --embedder hash" in out
    assert out_file.read_text().count("size | calls") == 1
    # the second size reuses the cached vectors of the first 120 texts and embeds the other 80
    assert "embedded 200 corpus texts" in out
    assert not list((tmp_path / "cache").glob("assemble-*"))  # scratch data dirs are removed


def test_bench_assemble_without_http_marks_http_cells(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(
        [
            "bench",
            "assemble",
            "--sizes",
            "60",
            "--calls",
            "3",
            "--embedder",
            "hash",
            "--no-http",
            "--cache-dir",
            str(tmp_path),
        ]
    )
    header, rows = table_rows(capsys.readouterr().out, "size")
    assert code == 0 and len(rows) == 1 and rows[0][11:13] == ["-", "-"]


def test_bench_ingest_prints_rates_and_turn_rows(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    args = [
        "--n",
        "40",
        "--turns",
        "4",
        "--loop-store",
        "30",
        "--embedder",
        "hash",
        "--cache-dir",
        str(tmp_path),
    ]
    code = main(["bench", "ingest", *args])
    out = capsys.readouterr().out
    assert code == 0
    header, rows = table_rows(out, "mode")
    assert header == ["mode", "path", "memories", "seconds", "memories/s"]
    assert [(r[0], r[1]) for r in rows] == [
        ("single", "in process"),
        ("batch", "in process"),
        ("single", "http"),
        ("batch", "http"),
    ]
    for row in rows:
        assert row[2] == "40"
        # seconds are printed to 3 decimals: the rate must agree with some duration that rounds to it
        shown, rate = float(row[3]), float(row[4])
        low, high = max(shown - 0.0005, 1e-9), shown + 0.0005
        assert 40 / high * 0.999 <= rate <= 40 / low * 1.001, (shown, rate)
    header, turns = table_rows(out, "path")
    assert header[:3] == ["path", "calls", "store size"] and header[-1] == "facts/turn"
    assert [t[0] for t in turns] == ["in process"]
    assert turns[0][2] == "40"  # the in-process batch store
    assert float(turns[0][-1]) > 0  # the turns are first-person statements the rules extract
    assert "the agent loop over HTTP: 4 steps on a store of 30 LoCoMo turns" in out
    _, calls = table_rows(out, "call")
    assert [c[0].split(" (")[0] for c in calls] == [
        "assemble with the default ingest",
        "assemble, ingest off",
        "POST /v0/memories, items of 1",
        "read + write",
    ]
    assert all(numbers(c[1])[0] > 0 for c in calls)
    assert "ingest <= read + write: p50" in out


def test_bench_rejects_bad_sizes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "assemble", "--sizes", "10,x"])


COUNTS = [
    ("assemble", "--calls"),
    ("ingest", "--n"),
    ("ingest", "--turns"),
    ("writes", "--batches"),
    ("writes", "--singles"),
    ("encoder", "--sample"),
    ("encoder", "--queries"),
    ("encoder", "--batches"),
    ("peers", "--turns"),
    ("peers", "--reads"),
    ("peers", "--singles"),
    ("peers", "--rounds"),
    ("redos", "--calls"),
    ("scale", "--memories"),
    ("scale", "--calls"),
    ("scale", "--repeat"),
    ("hnsw", "--queries"),
    ("hnsw", "--k"),
]


@pytest.mark.parametrize(("bench", "flag"), COUNTS, ids=" ".join)
@pytest.mark.parametrize("value", ["0", "-2"])
def test_bench_rejects_a_count_below_one_at_parsing(
    bench: str, flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`loci bench encoder --queries 0` ran and printed a table of nan."""
    from evals.bench.cli import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([bench, flag, value])
    assert exc.value.code == 2
    assert f"error: argument {flag}: must be at least 1, not {value}" in capsys.readouterr().err


def test_bench_counts_that_may_be_zero_parse_and_below_zero_do_not() -> None:
    from evals.bench.cli import build_parser

    assert build_parser().parse_args(["assemble", "--max-embed", "0"]).max_embed == 0
    assert build_parser().parse_args(["ingest", "--loop-store", "0"]).loop_store == 0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["assemble", "--max-embed", "-1"])


def test_corpus_is_distinct_a_tenth_facts_and_a_prefix_stream() -> None:
    small, large = corpus.memories(50), corpus.memories(200)
    assert [m.text for m in small] == [m.text for m in large[:50]]
    assert len({m.text for m in large}) == 200
    facts = [m for m in large if m.type == "fact"]
    assert len(facts) == 20 and all(m.subject and m.predicate and m.object for m in facts)
    assert all(m.entity_id == corpus.ENTITY and m.org_id == corpus.ORG for m in large)


def test_vector_cache_persists_and_stands_in_past_max_embed(tmp_path: Path) -> None:
    texts = corpus.texts(30)
    first = VectorCache(create_embedder("hash"), str(tmp_path), max_embed=20)
    got = first.vectors(texts, progress=None)
    assert first.embedded == 20 and first.standins == 10
    assert (got[text_hash(texts[25])] == standin(text_hash(texts[25]), 256)).all()
    first.close()
    again = VectorCache(create_embedder("hash"), str(tmp_path), max_embed=0)
    again.vectors(texts[:20], progress=None)
    assert again.embedded == 0 and again.standins == 0  # the first 20 came from the cache on disk
    again.close()


def test_stage_other_and_verdict() -> None:
    tm = StageTimings(embed=1.0, channels=2.0, fuse=0.5, budget=0.25, render=0.25, total=6.0)
    assert stage_ms(tm, "other") == 2.0 and stage_ms(tm, "fuse") == 0.5
    assert pct([1.0, 2.0, 3.0, 4.0, 5.0]) == Pct(p50=3.0, p95=4.8)

    def row(size: int, p50: float, p95: float) -> AssembleRow:
        return AssembleRow(size=size, calls=1, load_s=0, warm_ms=0, stages={"total": Pct(p50=p50, p95=p95)})

    assert verdict(row(10_000, 25.0, 50.0)) == "<=25/<=50 MET"
    assert verdict(row(10_000, 20.0, 51.0)) == "<=25/<=50 MISSED"
    assert verdict(row(100_000, 90.0, 99.0)) == "-/<=100 MET"
    assert verdict(row(1000, 500.0, 900.0)) == "-"


def test_a_bench_run_from_another_directory_serves_its_own_store(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a relative cache directory the server was started in the checkout's directory and opened
    another (empty) store there: every HTTP call of the bench answered 401 to the bench's key."""
    monkeypatch.chdir(tmp_path)
    code = main(
        ["bench", "assemble", "--sizes", "120", "--calls", "3", "--embedder", "hash", "--cache-dir", "cache"]
    )
    assert code == 0, capsys.readouterr()
    _, rows = table_rows(capsys.readouterr().out, "size")
    assert rows and all("n/a" not in " ".join(row) for row in rows), rows


@pytest.mark.parametrize(
    "bench", ["assemble", "ingest", "writes", "encoder", "peers", "redos", "scale", "hnsw"]
)
@pytest.mark.parametrize("where", ["missing directory", "a directory"])
def test_bench_refuses_an_out_it_cannot_append_to_before_running(
    bench: str, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad --out failed with a traceback after the whole run, its tables not written."""
    from evals.bench.cli import build_parser

    out = tmp_path / "nowhere" / "tables.md" if where == "missing directory" else tmp_path
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([bench, "--out", str(out)])
    assert exc.value.code == 2
    assert "argument --out: cannot append to" in capsys.readouterr().err
    assert build_parser().parse_args([bench, "--out", str(tmp_path / "ok.md")]).out == str(tmp_path / "ok.md")
