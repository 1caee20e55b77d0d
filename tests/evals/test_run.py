from __future__ import annotations

import hashlib
import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import msgspec
import pytest

from engine.errors import InvalidInput
from evals.model import encode_dataset
from evals.replay import HttpBackend
from evals.run import BASELINES, CHOSEN, RunConfig, configurations, overview, run_eval, select
from server.cli import main
from tests.evals._tiny import CountingBackend, tiny_dataset


def test_configurations_put_chosen_first_then_presets_then_baselines() -> None:
    cfgs = configurations(RunConfig(preset="fast", budget=800, compare_presets=("factual",)))
    assert list(cfgs) == [CHOSEN, "preset:factual", "bm25-only", "semantic-only"]
    assert cfgs[CHOSEN].preset == "fast" and cfgs["preset:factual"].preset == "factual"
    # a baseline zeroes every other channel (a weight left out would take the preset's value)
    assert cfgs["bm25-only"].weights == {
        "semantic": 0.0,
        "bm25": 1.0,
        "graph_prior": 0.0,
        "recency_decay": 0.0,
        "confidence": 0.0,
    }
    assert cfgs["semantic-only"].weights == BASELINES["semantic-only"]
    assert all(c.budget == 800 for c in cfgs.values())
    assert list(configurations(RunConfig(baselines=False))) == [CHOSEN]


def test_select_by_ids_then_limit() -> None:
    data = tiny_dataset(entities=4)
    ids = [c.conversation_id for c in data.conversations]
    chosen = select(data, RunConfig(conversations=(ids[2], ids[0]), limit=1))
    assert [c.conversation_id for c in chosen.conversations] == [ids[0]]
    assert {q.conversation_id for q in chosen.questions} == {ids[0]}
    with pytest.raises(InvalidInput):
        select(data, RunConfig(conversations=("nope",)))


def test_run_writes_the_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCI_EXTRACT_BUDGET_MS", "250")
    monkeypatch.setenv("LOCI_API_KEY", "lk_secret")
    data = tiny_dataset(entities=3)
    config = RunConfig(dataset="synthetic", rank_depth=0)
    backend = CountingBackend(config.replay_config())
    result = run_eval(config, out_dir=tmp_path, dataset=data, backend=backend)
    run_dir = result.run_dir
    assert run_dir is not None and run_dir.parent == tmp_path
    # written once per conversation, asked under three configurations
    assert backend.loads == [c.conversation_id for c in data.conversations]
    names = {p.name for p in run_dir.iterdir()}
    assert {
        "config.json",
        "questions.jsonl",
        "summary.json",
        "report.md",
        "recall_at_k.png",
        "recall_in_context_by_category.png",
        "utilization.png",
    } <= names
    cfg = json.loads((run_dir / "config.json").read_text())
    assert "commit" in cfg["git"] and cfg["run"]["dataset"] == "synthetic"
    assert set(cfg["configurations"]) == {CHOSEN, "bm25-only", "semantic-only"}
    # what the numbers depend on beyond the flags: the data as replayed and the settings in force
    assert cfg["dataset"]["sha256"] == hashlib.sha256(msgspec.json.encode(data)).hexdigest()
    assert cfg["settings"]["extract_budget_ms"] == 250.0
    assert cfg["settings"]["env"]["LOCI_EXTRACT_BUDGET_MS"] == "250"
    assert "LOCI_API_KEY" not in cfg["settings"]["env"]
    lines = [json.loads(x) for x in (run_dir / "questions.jsonl").read_text().splitlines()]
    per_config = len(result.frames[CHOSEN])
    assert len(lines) == 3 * per_config
    assert {row["config"] for row in lines} == {CHOSEN, "bm25-only", "semantic-only"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary[CHOSEN]["by_category"]["all"]["n"] == per_config
    assert summary[CHOSEN]["by_category"]["all"]["overflow_count"] == 0
    report = (run_dir / "report.md").read_text()
    assert "| bm25-only" in report and "![recall_at_k.png](recall_at_k.png)" in report
    table = overview(result.summaries)
    assert list(table.index) == [CHOSEN, "bm25-only", "semantic-only"]
    assert table.loc[CHOSEN, "recall_in_context"] == pytest.approx(
        result.frames[CHOSEN]["recall_in_context"].mean()
    )


def test_cli_runs_a_dataset_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tiny.json"
    path.write_bytes(encode_dataset(tiny_dataset(entities=2)))
    code = main(
        [
            "eval",
            "run",
            "--dataset",
            str(path),
            "--preset",
            "fast",
            "--weights",
            '{"bm25": 0.7, "semantic": 0.3}',
            "--budget",
            "600",
            "--rank-depth",
            "0",
            "--out",
            str(tmp_path / "runs"),
            "--quiet",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "bm25-only" in out and "semantic-only" in out and "written to" in out
    (run_dir,) = (tmp_path / "runs").iterdir()
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["configurations"][CHOSEN]["weights"] == {"bm25": 0.7, "semantic": 0.3}
    assert cfg["configurations"][CHOSEN]["budget"] == 600


def test_cli_rejects_bad_weights(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "run", "--weights", "[1, 2]", "--quiet"]) == 2
    assert "--weights" in capsys.readouterr().err


def test_run_over_http_uses_the_served_api(tmp_path: Path) -> None:
    from evals.local_api import start_local_api
    from evals.run import make_backend

    data = tiny_dataset(entities=1)
    config = RunConfig(dataset="synthetic", rank_depth=0, http_url="http://testserver")
    with pytest.raises(InvalidInput):
        make_backend(config, None)
    with start_local_api(org="evals") as api:
        backend = make_backend(config, api.secret, client=api.client)
        result = run_eval(config, dataset=data, backend=backend, write=False)
        assert isinstance(backend, HttpBackend)
        namespace = f"{backend.prefix}-{data.conversations[0].conversation_id.lower()}"
        listed = api.get(f"/v0/memories?namespace={namespace}")
    assert result.run_dir is None
    n = len(result.frames[CHOSEN])
    assert n > 0 and set(result.frames) == {CHOSEN, "bm25-only", "semantic-only"}
    # the turns went through POST /v0/memories (one namespace per conversation)
    assert listed["items"] and all(m["namespace"] == namespace for m in listed["items"])
    assert {m["type"] for m in listed["items"]} <= {"event", "fact"}  # turns, and facts of user turns


def test_the_local_api_leaves_the_hosts_logging_alone(caplog: pytest.LogCaptureFixture) -> None:
    """A notebook or `loci eval run --http local` serves the app in its own process: the app neither
    raises the process's root logger to INFO nor writes an access line per request."""
    from evals.local_api import start_local_api

    root = logging.getLogger()
    root.setLevel(logging.WARNING)
    caplog.set_level(logging.INFO, logger="loci.access")
    with start_local_api(org="evals") as api:
        api.post("/v0/memories", {"type": "note", "text": "Ana likes tea.", "entity_id": "ent:ana"})
        assert root.level == logging.WARNING
    assert root.level == logging.WARNING
    assert not [r for r in caplog.records if r.name == "loci.access"]


def test_a_second_run_against_one_server_asks_over_its_own_memories_only() -> None:
    """Each run writes into namespaces of its own: the same run twice on one server scores the same,
    not the second over both runs' turns."""
    from evals.local_api import start_local_api
    from evals.run import make_backend

    data = tiny_dataset(entities=1)
    config = RunConfig(dataset="synthetic", rank_depth=0, baselines=False, http_url="http://testserver")
    with start_local_api(org="evals") as api:
        runs = [
            run_eval(
                config, dataset=data, backend=make_backend(config, api.secret, client=api.client), write=False
            )
            for _ in range(2)
        ]
    first, second = (r.frames[CHOSEN] for r in runs)
    for column in ("recall_at_5", "mrr", "recall_in_context"):
        assert list(second[column]) == list(first[column])


def test_runs_on_one_store_file_ask_over_their_own_memories_only(tmp_path: Path) -> None:
    """`--store sqlite:///path.db` is one store every conversation and run writes to: the second run
    asked over both runs' turns (one namespace, "eval"), and scored below the first."""
    data = tiny_dataset(entities=2)
    fresh = run_eval(RunConfig(dataset="synthetic", baselines=False), dataset=data, write=False)
    config = RunConfig(dataset="synthetic", baselines=False, store=f"sqlite://{tmp_path / 'store.db'}")
    runs = [run_eval(config, dataset=data, write=False) for _ in range(2)]
    columns = ["recall_at_5", "recall_at_10", "mrr", "recall_in_context", "supersession_correct"]
    for run in runs:
        assert run.frames[CHOSEN][columns].equals(fresh.frames[CHOSEN][columns])


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--preset", "bogus"], "retrieval.preset"),
        (["--compare-presets", "bogus"], "preset:bogus"),
        (["--normalization", "bogus"], "retrieval.normalization"),
        (["--tokenizer", "bogus"], "budget.tokenizer"),
        (["--budget", "10"], "budget.max_context_tokens"),
        (["--budgets", "600,abc"], "--budgets"),
        (["--weights", '{"semantic": -1}'], "retrieval.weights"),
        (["--half-life", "-5"], "retrieval.recency_half_life_days"),
        (["--half-life", "0"], "retrieval.recency_half_life_days"),
        (["--half-life", "36501"], "retrieval.recency_half_life_days"),
        (["--retrieval", '{"top_k": 0}'], "retrieval.top_k"),
        (["--max-events", "-1"], "return.max_events"),
        (["--limit", "0"], "--limit"),
        (["--limit-questions", "-2"], "--limit-questions"),
        (["--categories", "nosuchcat"], "nosuchcat"),
        (["--http", "http://127.0.0.1:9", "--api-key", "k", "--embedder", "hash"], "--embedder"),
    ],
)
def test_a_bad_run_option_is_a_clear_error_before_anything_runs(
    args: list[str], named: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert _exit_code(["eval", "run", "--embedder", "hash", "--quiet", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # no run directory written


@pytest.mark.parametrize(
    ("command", "named"),
    [
        (["sweep", "--presets", "bogus"], "retrieval.preset"),
        (["sweep", "--normalizations", "bogus"], "retrieval.normalization"),
        (["sweep", "--half-lives", "abc"], "--half-lives"),
        (["sweep", "--half-lives", "7,0"], "retrieval.recency_half_life_days"),
        (["fit", "--normalization", "bogus"], "retrieval.normalization"),
    ],
)
def test_a_bad_sweep_or_fit_option_is_a_clear_error(
    command: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _exit_code(["eval", *command, "--embedder", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


@pytest.mark.parametrize("text", ["{not json", '{"name": "x"}', '{"kind":"header"}\n{"kind":"memory"}\n'])
@pytest.mark.parametrize("command", ["run", "sweep", "fit"])
def test_a_dataset_file_that_is_not_one_is_a_clear_error(
    text: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert _exit_code(["eval", command, "--dataset", str(path), "--embedder", "hash", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"error: not a dataset file: {path}: " in err and "Traceback" not in err


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """A server that answers every POST 401 with Loci's error envelope; yields its URL."""

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"error": "unauthorized", "message": "invalid API key"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("case", ["401", "refused"])
def test_a_server_that_refuses_or_is_not_there_is_a_one_line_error(
    case: str, refusing_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--http URL` gave httpx's traceback (exit 1) on a 401 or a refused connection."""
    url = refusing_server if case == "401" else f"http://127.0.0.1:{_closed_port()}"
    path = tmp_path / "tiny.json"
    path.write_bytes(encode_dataset(tiny_dataset(entities=1)))
    out = tmp_path / "runs"
    argv = ["eval", "run", "--dataset", str(path), "--http", url, "--api-key", "k", "--quiet"]
    assert _exit_code([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: POST {url}/v0/memories: ") and err.count("\n") == 1
    assert ("401 Unauthorized: invalid API key" if case == "401" else "no answer (") in err
    assert not out.exists()


@pytest.mark.parametrize("url", ["localhost:9", "127.0.0.1:9", "ftp://host", "http://"])
def test_an_http_url_without_a_scheme_is_refused_before_loading(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import evals.run

    def no_loading(name: str) -> None:
        raise AssertionError("loaded")

    monkeypatch.setattr(evals.run, "load_dataset", no_loading)
    assert _exit_code(["eval", "run", "--http", url, "--api-key", "k", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"error: --http {url!r} is not an http:// or https:// URL (or 'local' for the app in process)\n"
    )


@pytest.mark.parametrize("command", ["run", "sweep", "heldout"])
@pytest.mark.parametrize("under", ["", "/runs"])
def test_an_out_that_cannot_hold_a_run_directory_is_refused_before_loading(
    command: str,
    under: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--out` naming a file (or a directory under one) failed only after the whole replay."""
    import importlib

    def no_loading(name: str) -> None:
        raise AssertionError("loaded")

    monkeypatch.setattr(importlib.import_module(f"evals.{command}"), "load_dataset", no_loading)
    taken = tmp_path / "notes.txt"
    taken.write_text("mine")
    out = f"{taken}{under}"
    argv = ["eval", command, "--embedder", "hash", "--quiet", "--out", out]
    assert _exit_code(argv) == 2
    assert capsys.readouterr().err == f"error: --out {out}: {taken} is not a directory\n"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"] and taken.read_text() == "mine"


@pytest.mark.parametrize("command", ["run", "sweep", "fit", "heldout"])
def test_a_dataset_path_to_no_file_is_a_clear_error(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    argv = ["eval", command, "--dataset", str(missing), "--embedder", "hash", "--quiet"]
    assert _exit_code(argv) == 2
    assert capsys.readouterr().err == f"error: no such file: {missing}\n"


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


def test_the_report_states_the_ingest_that_ran(tmp_path: Path) -> None:
    # --ingest events extracts nothing: the report must not say it did
    config = RunConfig(dataset="synthetic", ingest="events", rank_depth=0, baselines=False)
    result = run_eval(config, out_dir=tmp_path, dataset=tiny_dataset(entities=2))
    assert result.run_dir is not None
    report = (result.run_dir / "report.md").read_text()
    assert "ingest `events`, extract False" in report
    assert "extract True" not in report


def test_the_run_records_the_weights_that_ran(tmp_path: Path) -> None:
    # a weight left out of --weights takes the preset's value and the vector is renormalized
    config = RunConfig(
        dataset="synthetic", weights={"semantic": 0.5, "bm25": 0.5}, rank_depth=0, baselines=False
    )
    result = run_eval(config, out_dir=tmp_path, dataset=tiny_dataset(entities=2))
    assert result.run_dir is not None
    used = json.loads((result.run_dir / "config.json").read_text())["weights_used"][CHOSEN]
    assert used["semantic"] == used["bm25"] < 0.5 and used["graph_prior"] > 0
    assert sum(used.values()) == pytest.approx(1.0)
    report = (result.run_dir / "report.md").read_text()
    assert f"weights used `{used}`" in report


def test_a_category_with_no_scored_question_is_refused_not_dropped() -> None:
    # LoCoMo's adversarial questions have no evidence: asked next to single-hop they would vanish
    import msgspec

    from evals.run import check_questions

    data = tiny_dataset(entities=2)
    unscored = msgspec.structs.replace(
        data.questions[0], question_id="adv", category="adversarial", answerable=False, evidence=()
    )
    unscored = msgspec.structs.replace(unscored, current_values=(), stale_values=())
    data = msgspec.structs.replace(data, questions=(*data.questions, unscored))
    kept = data.questions[0].category
    check_questions(data, RunConfig(categories=(kept,)))
    with pytest.raises(InvalidInput, match="adversarial"):
        check_questions(data, RunConfig(categories=(kept, "adversarial")))


def test_a_retrieval_block_does_not_override_what_baselines_and_compared_presets_are() -> None:
    from evals.replay import weights_used

    config = RunConfig(
        retrieval={"preset": "fast", "weights": {"semantic": 0.9, "bm25": 0.1}, "top_k": 30},
        compare_presets=("factual",),
    )
    cfgs = configurations(config)
    assert weights_used(cfgs["bm25-only"]) == {**BASELINES["bm25-only"]}
    assert weights_used(cfgs["semantic-only"]) == {**BASELINES["semantic-only"]}
    assert (cfgs["preset:factual"].retrieval or {}).get("preset", "factual") == "factual"
    assert all((c.retrieval or {})["top_k"] == 30 for c in cfgs.values())  # the other options still apply


def test_a_compared_preset_runs_as_shipped_not_with_the_runs_weights_or_half_life() -> None:
    from evals.replay import weights_used

    shipped = weights_used(configurations(RunConfig(preset="factual"))[CHOSEN])
    tuned = {"semantic": 0.9, "bm25": 0.1}
    for config in (
        RunConfig(weights=tuned, recency_half_life_days=3, compare_presets=("factual",)),
        RunConfig(retrieval={"weights": tuned, "recency_half_life_days": 3}, compare_presets=("factual",)),
    ):
        cfgs = configurations(config)
        compared = cfgs["preset:factual"]
        assert weights_used(compared) == shipped != weights_used(cfgs[CHOSEN])
        assert compared.recency_half_life_days is None
        assert "recency_half_life_days" not in (compared.retrieval or {})


def test_the_run_counts_the_conversations_it_asked(tmp_path: Path) -> None:
    # a conversation none of whose questions is kept is not written or asked: it is not counted
    import msgspec

    data = tiny_dataset(entities=4)
    asked = [c.conversation_id for c in data.conversations][:2]
    data = msgspec.structs.replace(
        data, questions=tuple(q for q in data.questions if q.conversation_id in asked)
    )
    result = run_eval(RunConfig(rank_depth=0, baselines=False), out_dir=tmp_path, dataset=data)
    assert result.run_dir is not None
    assert json.loads((result.run_dir / "config.json").read_text())["dataset"]["conversations"] == 2
    assert f"`{data.name}` (2 conversations)" in (result.run_dir / "report.md").read_text()
