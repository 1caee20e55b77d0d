"""`loci bench peers`: Loci next to mem0 on a tiny LoCoMo slice (runs where mem0ai is installed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from evals.bench import peers
from evals.bench.harness import Pct
from loci.wire.tuning import PresetName
from server.cli import main

pytestmark = pytest.mark.slow


def test_the_command_needs_mem0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(peers, "mem0_version", lambda: None)
    assert main(["bench", "peers", "--turns", "2"]) == 2
    assert "loci[peers]" in capsys.readouterr().err


def test_locomo_data_is_turns_in_order_and_distinct_questions() -> None:
    turns, questions = peers.locomo_data(30, 10)
    assert len(turns) == 30 and len(questions) == len(set(questions)) == 10
    assert all(":" in t.text for t in turns)
    assert [t.timestamp for t in turns] == sorted(t.timestamp for t in turns)


def test_single_writes_keep_their_turns_when_the_bulk_load_takes_the_whole_corpus() -> None:
    data = [peers.Turn(f"t{i}", None) for i in range(10)]
    bulk, single = peers.split_turns(data, turns=10, singles=3)
    assert [t.text for t in single] == ["t7", "t8", "t9"] and len(bulk) == 7
    bulk, single = peers.split_turns(data, turns=4, singles=3)
    assert len(bulk) == 4 and [t.text for t in single] == ["t4", "t5", "t6"]
    with pytest.raises(ValueError):
        peers.split_turns(data, turns=10, singles=10)


def _table(rounds: list[tuple[float, float, float, float]]) -> peers.PeersTable:
    """A table whose read rounds are (Loci p50, Loci p95, mem0 p50, mem0 p95)."""
    made = [peers.ReadRound(loci=Pct(p50=a, p95=b), mem0=Pct(p50=c, p95=d)) for a, b, c, d in rounds]
    row = peers.SideRow(name="Loci", read=made[0].loci, single_write=Pct(p50=5, p95=6), bulk_rate=500)
    other = peers.SideRow(name="mem0", read=made[0].mem0, single_write=Pct(p50=80, p95=90), bulk_rate=12)
    return peers.PeersTable(
        turns=10, reads=3, singles=2, loci=row, mem0=other, embedder="e", mem0_version="v", rounds=made
    )


def test_read_rounds_list_each_rounds_ratios_and_their_median() -> None:
    text = _table([(5, 6, 10, 12), (6, 7, 10, 10), (4, 8, 10, 20)]).format()
    assert "read rounds: 3 x 3 distinct questions" in text
    assert "| 1 | 5.0/6.0 | 10.0/12.0 | 0.50 | 0.50 |" in text
    assert "| 2 | 6.0/7.0 | 10.0/10.0 | 0.60 | 0.70 |" in text
    assert "| 3 | 4.0/8.0 | 10.0/20.0 | 0.40 | 0.40 |" in text
    assert "median ratio over 3 rounds: p50 0.50, p95 0.50 (highest: p50 0.60, p95 0.70)" in text
    one = _table([(5, 6, 10, 12)]).format()
    assert "read rounds" not in one and "| read p95 ms | 6.0 | 12.0 | 0.50 |" in one


def test_rounds_beyond_the_distinct_questions_are_refused_before_any_store_is_made(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(peers, "mem0_version", lambda: "2.2.1")
    cache = tmp_path / "cache"
    args = ["bench", "peers", "--turns", "12", "--singles", "2", "--cache-dir", str(cache)]
    assert main([*args, "--reads", "1000", "--rounds", "2"]) == 2
    assert "2000 distinct questions; LoCoMo has" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # at parsing, as every bench count below 1
        main([*args, "--reads", "3", "--rounds", "0"])
    assert refused.value.code == 2
    assert "--rounds: must be at least 1, not 0" in capsys.readouterr().err
    assert not cache.exists()


@pytest.mark.skipif(
    peers.mem0_version() is None, reason="mem0ai is not installed (pip install 'loci[peers]')"
)
def test_peers_bench_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "peers.md"
    code = main(
        [
            "bench",
            "peers",
            "--turns",
            "12",
            "--reads",
            "3",
            "--singles",
            "2",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--rounds",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "read rounds: 2 x 3 distinct questions" in printed and "median ratio over 2 rounds" in printed
    # the headline reads are the first round's
    head = {
        line.split("|")[1].strip(): line.split("|")[2:4]
        for line in printed.splitlines()
        if "| read p" in line
    }
    first = next(line for line in printed.splitlines() if line.startswith("| 1 |")).split("|")
    loci_p50, loci_p95 = (float(c.strip()) for c in (head["read p50 ms"][0], head["read p95 ms"][0]))
    assert first[2].strip() == f"{loci_p50:.1f}/{loci_p95:.1f}"
    assert "| read p50 ms |" in printed and "| bulk writes / s" in printed and "mem0 2.2.1" in printed
    assert out.read_text().strip() in printed
    assert not any((tmp_path / "cache").iterdir())  # scratch stores removed
    cells = [line.split("|")[2:5] for line in printed.splitlines() if line.startswith("| read p50")]
    assert all(
        math.isfinite(float(c.strip().rstrip("x"))) and float(c.strip().rstrip("x")) > 0 for c in cells[0]
    )


def _http_round(
    http: tuple[float, float], mem0: tuple[float, float], served: float, engine: float, empty: float = 4.0
) -> Any:
    from evals.bench.peers_http import STAGES, HttpRound

    return HttpRound(
        http=Pct(p50=http[0], p95=http[1]),
        in_process=Pct(p50=engine + 0.5, p95=engine + 1),
        mem0=Pct(p50=mem0[0], p95=mem0[1]),
        served={s: Pct(p50=served, p95=served) for s in STAGES},
        engine={s: Pct(p50=engine, p95=engine) for s in STAGES},
        empty=Pct(p50=empty, p95=empty + 1),
        empty_served={s: Pct(p50=empty / 2, p95=empty / 2) for s in STAGES},
    )


def test_http_rounds_list_http_over_mem0_and_the_engine_in_the_server_over_in_process() -> None:
    from evals.bench.peers_http import HttpPeersTable

    table = HttpPeersTable(
        turns=10,
        reads=3,
        embedder="e",
        mem0_version="v",
        rounds=[_http_round((6, 9), (12, 15), 6, 5, 3), _http_round((7, 12), (10, 20), 5.5, 5, 4)],
    )
    text = table.format()
    assert (
        "| 1 | 6.0/9.0 | 12.0/15.0 | 0.50 | 0.60 | 5.5/6.0 | 1.20 (6.0 / 5.0, 6.0 / 5.0, 6.0 / 5.0) "
        "| 3.0/4.0 (1.5, 1.5) |" in text
    )
    assert "| 2 | 7.0/12.0 | 10.0/20.0 | 0.70 | 0.60 |" in text
    assert "median over 2 rounds: HTTP / mem0 p50 0.60, p95 0.60 (highest: p50 0.70, p95 0.60)" in text
    assert "engine in server / in process 1.15; an empty scope over HTTP p50 3.5 ms, 0.33 of mem0's" in text


@pytest.mark.parametrize("preset", [None, "fast"])
def test_the_http_body_is_the_in_process_request(preset: PresetName | None) -> None:
    import msgspec

    from engine.retrieval.options import AssembleRequest
    from evals.bench.peers_http import read_body

    sent = msgspec.convert(read_body("Where did Caroline go?", preset), AssembleRequest)
    assert sent == peers.read_request("Where did Caroline go?", preset)
    assert sent.retrieval.preset == preset


@pytest.mark.skipif(
    peers.mem0_version() is None, reason="mem0ai is not installed (pip install 'loci[peers]')"
)
def test_peers_bench_over_http_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--turns", "12", "--reads", "3", "--singles", "2", "--rounds", "2", "--http", "--preset", "fast"]
    code = main(["bench", "peers", *args, "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    printed = capsys.readouterr().out
    rows = [line.split("|") for line in printed.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert len(rows) == 2
    for row in rows:
        ratios = [float(row[i]) for i in (4, 5)]
        assert all(math.isfinite(r) and r > 0 for r in ratios)
        assert float(row[7].split()[0]) > 0  # the server's trace was read
        empty_ms, engine_ms = float(row[8].split("/")[0]), float(row[8].split("(")[1].split(",")[0])
        assert 0 < engine_ms < empty_ms  # the empty scope's reads: over HTTP, and their engine time
    assert "median over 2 rounds" in printed and "--http --preset fast" in printed
    assert "(Loci: assemble, preset fast," in printed
    assert not any((tmp_path / "cache").iterdir())  # scratch stores and the served copy removed


def test_the_empty_scope_asks_other_questions_in_the_same_body_for_an_entity_with_no_memories() -> None:
    from evals.bench.peers_http import EMPTY, read_body

    _, _, one = peers.inputs(10, 3, 2, 2)
    _, _, two = peers.inputs(10, 3, 2, 2, per_read=2)
    assert two[:6] == one and len(set(two)) == 12  # the three sides' questions, then six others
    body = read_body("Where did Caroline go?", "fast", EMPTY)
    assert body == {**read_body("Where did Caroline go?", "fast"), "entity_id": EMPTY}
    with pytest.raises(ValueError, match="need"):
        peers.inputs(10, 2000, 2, 1, per_read=2)


def test_a_gap_rests_before_each_call_untimed_and_the_table_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from evals.bench import peers
    from evals.bench.peers_http import HttpPeersTable

    clock, slept = [0.0], []  # a clock only the rest and the calls move

    def rest(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    def call(side: str, item: int) -> None:
        calls.append((side, item))
        clock[0] += 0.001

    monkeypatch.setattr("evals.bench.peers.time.sleep", rest)
    monkeypatch.setattr("evals.bench.peers.time.perf_counter", lambda: clock[0])
    calls: list[tuple[str, int]] = []
    wall = peers.alternate(["a", "b"], [1, 2], call, gap=0.25)
    assert calls == [("a", 1), ("b", 1), ("a", 2), ("b", 2)] and slept == [0.25] * 4
    assert wall == [[pytest.approx(0.001)] * 2] * 2  # the rest is not the call's time
    table = HttpPeersTable(
        turns=10,
        reads=3,
        embedder="e",
        mem0_version="v",
        rounds=[_http_round((6, 9), (12, 15), 6, 5, 3)],
        gap_ms=250,
    )
    assert "250 ms of rest before each call" in table.format()
