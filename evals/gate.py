"""The eval gate: a small replay that CI runs on every change (`tests/evals/test_gate.py`).

    measure(GateSpec()) -> {"locomo.recall_in_context": 0.41, ...}
    check(measured, load_floors()) -> [] (or the list of failures)

It replays through the engine in process, with the default preset and the `hash` embedder, on the
store `measure` is given (CI runs it on SQLite and on an embedded PostgreSQL: one set of floors, since
both rank alike):
- the first `locomo_conversations` LoCoMo conversations (categories 1-4; turns as events, no
  extraction, questions one day after the last session, `return.max_events` 200: the protocol of
  `loci eval run --ingest events`);
- the agent loop (`loci eval run --ingest agent`: every turn through assemble with the default ingest)
  on the first `agent_conversations` LoCoMo conversations, asked with the API's default `return` and
  with room (`max_events` 200), and on the first `agent_longmemeval` questions of each type of the
  LongMemEval_S development split (both roles stored);
- a seeded synthetic set (with fact extraction);
and compares with `evals/floors.json`:
- `floors`: a measured value below its floor fails (evidence recall in context, supersession accuracy)
- `ceilings`: a value above its ceiling fails (budget overflow count: must stay 0; stale leakage)
The file also keeps the values measured when the floors were set (`measured`), so a reviewer sees
the margin. `loci eval gate` prints the comparison; `--write-measured` records new measurements
(the floors themselves are edited by hand, a little under what was measured).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from evals.loaders import load_dataset
from evals.metrics import metrics_frame, score, summarize
from evals.model import Dataset
from evals.replay import EngineBackend, ReplayConfig, evidence_questions
from evals.replay_many import replay_many
from evals.run import EVENTS_MAX_EVENTS, RunConfig, select
from evals.synthetic import SyntheticConfig, generate

FLOORS_PATH = Path(__file__).resolve().parent / "floors.json"
LOCOMO_CATEGORIES: tuple[str, ...] = ("multi-hop", "temporal", "open-domain", "single-hop")


class GateSpec(msgspec.Struct, frozen=True, kw_only=True):
    locomo_conversations: int = 2
    agent_conversations: int = 1
    agent_longmemeval: int = 1  # questions of each type
    synthetic_seed: int = 11
    synthetic_entities: int = 12
    preset: str | None = None  # the default (balanced)
    embedder: str = "hash"
    budget: int = 1200
    rank_depth: int = 0  # the gate scores the assembled context; no second ranking call


def _summary(dataset: Any, config: ReplayConfig, keep: Any) -> Any:
    return _summaries(dataset, {"gate": config}, keep)["gate"]


def _summaries(dataset: Any, configs: dict[str, ReplayConfig], keep: Any) -> dict[str, Any]:
    """Per configuration, the overall summary row; the dataset is written once for all of them."""
    first = next(iter(configs.values()))
    records = replay_many(dataset, EngineBackend(first), configs, questions=keep)
    return {
        name: summarize(metrics_frame(score(r) for r in rs), by=None).loc["all"]
        for name, rs in records.items()
    }


def first_of_each_type(dataset: Dataset, n: int) -> Dataset:
    """The first `n` questions of each category, with their conversations."""
    seen: dict[str, int] = {}
    ids: list[str] = []
    for q in dataset.questions:
        if seen.get(q.category, 0) < n:
            seen[q.category] = seen.get(q.category, 0) + 1
            ids.append(q.conversation_id)
    return dataset.subset(list(dict.fromkeys(ids)))


def _agent_loop(s: GateSpec, store: str) -> dict[str, float]:
    """The agent loop on a LoCoMo slice (default `return`, and with room) and a LongMemEval_S slice."""
    agent = RunConfig(dataset="locomo", ingest="agent", preset=s.preset, embedder=s.embedder, budget=s.budget,
                      rank_depth=s.rank_depth, limit=s.agent_conversations, store=store)  # fmt: skip
    default = agent.replay_config()
    configs = {"default": default, "room": msgspec.structs.replace(default, max_events=EVENTS_MAX_EVENTS)}
    keep = lambda q: evidence_questions(q) and q.category in LOCOMO_CATEGORIES  # noqa: E731
    loc = _summaries(select(load_dataset("locomo"), agent), configs, keep)
    lme = first_of_each_type(load_dataset("longmemeval-s-dev"), s.agent_longmemeval)
    lme_room = _summary(lme, configs["room"], evidence_questions)
    out: dict[str, float] = {}
    for name, row in (("agent.locomo", loc["default"]), ("agent.locomo.room", loc["room"]),
                      ("agent.longmemeval.room", lme_room)):  # fmt: skip
        out[f"{name}.recall_in_context"] = round(float(row["recall_in_context"]), 4)
        out[f"{name}.overflow_count"] = float(row["overflow_count"])
    return out


#: the stores the gate runs on (`loci eval gate --backend`; `--backend` names of `loci eval run`)
GATE_STORES: dict[str, str] = {"sqlite": "sqlite://:memory:", "postgres": "postgres-embedded"}


def measure(spec: GateSpec | None = None, store: str = GATE_STORES["sqlite"]) -> dict[str, float]:
    """The gate's metrics, replayed on a fresh store of target `store` per conversation."""
    s = spec or GateSpec()
    config = ReplayConfig(
        preset=s.preset, embedder=s.embedder, budget=s.budget, rank_depth=s.rank_depth, store=store
    )
    events = RunConfig(
        dataset="locomo",
        ingest="events",
        preset=s.preset,
        embedder=s.embedder,
        budget=s.budget,
        rank_depth=s.rank_depth,
        limit=s.locomo_conversations,
        store=store,
    )
    locomo = select(load_dataset("locomo"), events)
    loc = _summary(
        locomo, events.replay_config(), lambda q: evidence_questions(q) and q.category in LOCOMO_CATEGORIES
    )
    synthetic = generate(SyntheticConfig(seed=s.synthetic_seed, entities=s.synthetic_entities))
    syn = _summary(synthetic, config, evidence_questions)
    return {
        **_agent_loop(s, store),
        "locomo.recall_in_context": round(float(loc["recall_in_context"]), 4),
        "locomo.recall_in_context_whole": round(float(loc["recall_in_context_whole"]), 4),
        "locomo.overflow_count": float(loc["overflow_count"]),
        "locomo.questions": float(loc["n"]),
        "synthetic.recall_in_context": round(float(syn["recall_in_context"]), 4),
        "synthetic.supersession_accuracy": round(float(syn["supersession_correct"]), 4),
        "synthetic.stale_leak": round(float(syn["stale_leak"]), 4),
        "synthetic.overflow_count": float(syn["overflow_count"]),
        "synthetic.questions": float(syn["n"]),
    }


class Floors(msgspec.Struct, kw_only=True):
    spec: GateSpec = msgspec.field(default_factory=GateSpec)
    floors: dict[str, float] = msgspec.field(default_factory=dict)
    ceilings: dict[str, float] = msgspec.field(default_factory=dict)
    measured: dict[str, float] = msgspec.field(default_factory=dict)
    note: str = ""


def load_floors(path: Path = FLOORS_PATH) -> Floors:
    return msgspec.json.decode(path.read_bytes(), type=Floors)


def check(measured: Mapping[str, float], floors: Floors) -> list[str]:
    """Failures, one line each: a metric under its floor, over its ceiling, or not measured."""
    failures = []
    for name, floor in floors.floors.items():
        value = measured.get(name)
        if value is None or not value >= floor:
            failures.append(f"{name} = {value} is below its floor {floor}")
    for name, ceiling in floors.ceilings.items():
        value = measured.get(name)
        if value is None or not value <= ceiling:
            failures.append(f"{name} = {value} is above its ceiling {ceiling}")
    return failures


def comparison(measured: Mapping[str, float], floors: Floors) -> str:
    lines = [f"{'metric':<36} {'measured':>9} {'floor':>7} {'ceiling':>8} {'recorded':>9}"]
    for name in sorted(set(measured) | set(floors.floors) | set(floors.ceilings)):

        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.4g}"

        lines.append(
            f"{name:<36} {fmt(measured.get(name)):>9} {fmt(floors.floors.get(name)):>7} "
            f"{fmt(floors.ceilings.get(name)):>8} {fmt(floors.measured.get(name)):>9}"
        )
    return "\n".join(lines)


def write_measured(measured: Mapping[str, float], path: Path = FLOORS_PATH) -> None:
    """Record new measurements beside the (unchanged) floors."""
    data = json.loads(path.read_text())
    data["measured"] = dict(measured)
    path.write_text(json.dumps(data, indent=2) + "\n")


__all__: Sequence[str] = (
    "FLOORS_PATH",
    "GATE_STORES",
    "Floors",
    "GateSpec",
    "check",
    "comparison",
    "load_floors",
    "measure",
    "write_measured",
)
