"""`loci eval run|sweep|fit`: the research harness from the command line (logic lives in `evals/`).

loci eval run --dataset locomo --preset balanced --budget 1200 [--limit 2] [--http URL --api-key KEY]
loci eval run --dataset locomo --ingest events --budgets 600,2400 [--http local] [--backend postgres]
loci eval run --dataset longmemeval-s-dev --ingest agent [--max-events 200]
loci eval sweep --dataset synthetic --mode random --samples 20 --holdout 0.3
loci eval fit --dataset locomo --folds 5
loci eval heldout --dataset locomo --candidates evals/candidates/locomo-events.json
loci eval gate [--backend sqlite|postgres] [--write-measured]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from engine.errors import InvalidInput
from server.commands import at_least


def _weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--weights is not JSON: {exc}", field="weights") from exc
    if not isinstance(value, dict) or not all(isinstance(v, int | float) for v in value.values()):
        raise InvalidInput('--weights must be a JSON object of numbers, e.g. {"bm25": 1}', field="weights")
    return {str(k): float(v) for k, v in value.items()}


def _json_object(text: str | None, name: str) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--{name} is not JSON: {exc}", field=name) from exc
    if not isinstance(value, dict):
        raise InvalidInput(f'--{name} must be a JSON object, e.g. {{"top_k": 48}}', field=name)
    return value


def _csv(text: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split(",") if s.strip())


def _ints(text: str | None, name: str) -> tuple[int, ...]:
    """A comma list of whole numbers (`--budgets`, `--half-lives`)."""
    try:
        return tuple(int(b) for b in _csv(text))
    except ValueError:
        raise InvalidInput(
            f"--{name} must be a comma list of whole numbers, not {text!r}", field=name
        ) from None


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


#: `--backend` -> the store target each conversation (or `--http local`'s app) opens
BACKEND_STORES: dict[str, str] = {
    "memory": "memory",
    "sqlite": "sqlite://:memory:",
    "postgres": "postgres-embedded",
}


def _store(args: argparse.Namespace) -> str:
    if args.backend is not None and args.store is not None:
        raise InvalidInput("give --backend or --store, not both", field="backend")
    if args.store is not None:
        return str(args.store)
    return BACKEND_STORES[args.backend or "memory"]


def _embedder(args: argparse.Namespace) -> str:
    return str(args.embedder or os.environ.get("LOCI_EMBEDDER", "minilm"))


#: what a run through a server at a URL records as its embedder and store: the server's own
SERVED = "served"


def _run(args: argparse.Namespace) -> int:
    from evals.run import LOCAL_API, RunConfig, print_summary, run_eval

    served = args.http is not None and args.http != LOCAL_API
    if served and (args.embedder is not None or args.backend is not None or args.store is not None):
        raise InvalidInput(
            "--http URL replays through that server, which embeds and stores as it is configured: "
            "leave out --embedder, --backend and --store (they apply in process and to --http local)",
            field="http",
        )

    config = RunConfig(
        dataset=args.dataset,
        preset=args.preset,
        normalization=args.normalization,
        weights=_weights(args.weights),
        recency_half_life_days=args.half_life,
        retrieval=_json_object(args.retrieval, "retrieval"),
        budget=args.budget,
        budgets=_ints(args.budgets, "budgets"),
        tokenizer=args.tokenizer,
        ingest=args.ingest,
        max_events=args.max_events,
        max_facts=args.max_facts,
        rank_depth=args.rank_depth,
        limit=args.limit,
        limit_questions=args.limit_questions,
        conversations=_csv(args.conversations),
        categories=_csv(args.categories),
        embedder=SERVED if served else _embedder(args),
        store=SERVED if served else _store(args),
        extract=not args.no_extract,
        baselines=not args.no_baselines,
        compare_presets=_csv(args.compare_presets),
        http_url=args.http,
    )
    result = run_eval(config, api_key=args.api_key, out_dir=args.out, progress=not args.quiet)
    print_summary(result, sys.stdout)
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from evals.sweep import SweepConfig, print_sweep, run_sweep

    config = SweepConfig(
        dataset=args.dataset,
        mode=args.mode,
        samples=args.samples,
        seed=args.seed,
        presets=_csv(args.presets) or ("balanced",),
        normalizations=_csv(args.normalizations) or ("minmax",),
        half_lives=_ints(args.half_lives, "half-lives"),
        weights=tuple(_weights(w) or {} for w in args.weights or ()),
        holdout=args.holdout,
        metric=args.metric,
        budget=args.budget,
        limit=args.limit,
        limit_questions=args.limit_questions,
        categories=_csv(args.categories),
        embedder=_embedder(args),
        store=_store(args),
    )
    result = run_sweep(config, out_dir=args.out, progress=not args.quiet)
    print_sweep(result, sys.stdout)
    return 0


def _fit(args: argparse.Namespace) -> int:
    from evals.fit import FitConfig, print_fit, run_fit

    config = FitConfig(
        dataset=args.dataset,
        folds=args.folds,
        normalization=args.normalization,
        rank_depth=args.rank_depth,
        limit=args.limit,
        limit_questions=args.limit_questions,
        categories=_csv(args.categories),
        embedder=_embedder(args),
        store=_store(args),
        c=args.c,
    )
    result = run_fit(config, progress=not args.quiet)
    print_fit(result, sys.stdout)
    return 0


def _heldout(args: argparse.Namespace) -> int:
    from pathlib import Path

    from evals.heldout import HeldoutConfig, print_heldout, run_heldout

    text = args.candidates
    if text and Path(text).is_file():
        text = Path(text).read_text()
    candidates = _json_object(text, "candidates") or {"default": {}}
    if not all(isinstance(v, dict) for v in candidates.values()):
        raise InvalidInput("--candidates maps names to retrieval objects", field="candidates")
    config = HeldoutConfig(
        dataset=args.dataset,
        ingest=args.ingest,
        candidates=candidates,
        split=_csv(args.split),
        budget=args.budget,
        budgets=_ints(args.budgets, "budgets") or (args.budget,),
        metric=args.metric,
        categories=_csv(args.categories),
        embedder=_embedder(args),
        store=_store(args),
        limit=args.limit,
        limit_questions=args.limit_questions,
    )
    print_heldout(run_heldout(config, out_dir=args.out), sys.stdout)
    return 0


def _gate(args: argparse.Namespace) -> int:
    from evals.gate import GATE_STORES, check, comparison, load_floors, measure, write_measured

    floors = load_floors()
    failures: list[str] = []
    for backend in args.backend or list(GATE_STORES):
        measured = measure(floors.spec, GATE_STORES[backend])
        print(f"{backend}:\n{comparison(measured, floors)}")
        if args.write_measured and backend == "sqlite":
            write_measured(measured)
            print("recorded the measured values in evals/floors.json (floors unchanged)")
        failures += [f"{backend}: {line}" for line in check(measured, floors)]
    for line in failures:
        print(f"FAIL {line}", file=sys.stderr)
    return 1 if failures else 0


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dataset",
        default="synthetic",
        help="locomo | longmemeval-oracle | longmemeval-ku | longmemeval-s-dev | synthetic | synthetic-mixed | "
        "PATH (common-format JSON)",
    )
    p.add_argument("--limit", type=at_least(1), default=None, help="only the first N conversations")
    p.add_argument(
        "--limit-questions",
        type=at_least(1),
        default=None,
        help="only the first N questions per conversation",
    )
    p.add_argument("--categories", default=None, help="comma list of question categories to keep")
    p.add_argument(
        "--embedder",
        default=None,
        help="minilm | openai | hash (default $LOCI_EMBEDDER or minilm; hash is for tests only)",
    )
    p.add_argument(
        "--backend",
        choices=tuple(BACKEND_STORES),
        default=None,
        help="memory (default), sqlite, or postgres: an embedded PostgreSQL, a fresh database per store",
    )
    p.add_argument(
        "--store",
        default=None,
        help="an open_store target each conversation opens instead, e.g. sqlite:///path.db (a file keeps "
        "every run's conversations, each written and asked in a namespace of its own)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("eval", help="replay datasets, sweep and fit retrieval settings")
    sub = parser.add_subparsers(dest="eval_command", metavar="ACTION")
    sub.required = True

    run = sub.add_parser("run", help="replay a dataset under one configuration and the baselines")
    _common(run)
    run.add_argument("--preset", default=None, help="balanced | fast | factual | recent | graphy")
    run.add_argument("--normalization", default="minmax")
    run.add_argument("--weights", default=None, help='JSON, e.g. {"semantic": 0.6, "bm25": 0.4}')
    run.add_argument(
        "--half-life",
        type=int,
        default=None,
        help="recency half-life in days, 1 to 36500 (default: the preset's)",
    )
    run.add_argument("--retrieval", default=None, help='more retrieval options, JSON, e.g. {"top_k": 48}')
    run.add_argument("--budget", type=int, default=1200)
    run.add_argument(
        "--budgets",
        default=None,
        help="comma list of more budgets to replay the configuration at (e.g. 600,2400)",
    )
    run.add_argument(
        "--tokenizer", default=None, help="budget.tokenizer: o200k_base | cl100k_base | estimate"
    )
    run.add_argument(
        "--ingest",
        choices=("facts", "events", "agent"),
        default="facts",
        help="facts: turns as events plus extracted facts; events: turns as events only, "
        "questions one day after the last session, max_events 200; agent: every turn through assemble "
        "with the default ingest (the agent loop), questions with the API's default return",
    )
    run.add_argument("--max-events", type=int, default=None, help="return.max_events")
    run.add_argument("--max-facts", type=int, default=None, help="return.max_facts")
    run.add_argument("--rank-depth", type=at_least(0), default=50)
    run.add_argument("--conversations", default=None, help="comma list of conversation ids")
    run.add_argument("--no-extract", action="store_true", help="write turns only, no fact extraction")
    run.add_argument("--no-baselines", action="store_true", help="skip bm25-only and semantic-only")
    run.add_argument(
        "--compare-presets",
        default=None,
        help="comma list of more presets replayed on the same stores (e.g. fast,factual), each as shipped: "
        "its own weights and half-life, the run's other options",
    )
    run.add_argument(
        "--http",
        default=None,
        metavar="URL",
        help="replay through a served API instead; 'local' serves the app in process",
    )
    run.add_argument("--api-key", default=None, help="bearer key for --http (never written to disk)")
    run.add_argument("--out", default=None, help="runs directory (default evals/runs)")
    run.set_defaults(func=_run)

    sweep = sub.add_parser("sweep", help="grid or random search, scored on held-out conversations")
    _common(sweep)
    sweep.add_argument("--mode", choices=("grid", "random"), default="random")
    sweep.add_argument("--samples", type=at_least(1), default=20, help="random mode: weight vectors to draw")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--presets", default=None, help="comma list (default balanced)")
    sweep.add_argument("--normalizations", default=None, help="comma list (default minmax)")
    sweep.add_argument(
        "--half-lives", default=None, help="comma list of days, each 1 to 36500 (default: the preset's)"
    )
    sweep.add_argument(
        "--weights",
        action="append",
        default=None,
        help="a weights JSON to include (repeatable); grid mode uses only these if given",
    )
    sweep.add_argument("--holdout", type=float, default=0.3, help="share of conversations held out")
    sweep.add_argument("--metric", default="recall_in_context")
    sweep.add_argument("--budget", type=int, default=1200)
    sweep.add_argument("--out", default=None, help="runs directory (default evals/runs)")
    sweep.set_defaults(func=_sweep)

    fit = sub.add_parser("fit", help="learn channel weights from score components (logistic regression)")
    _common(fit)
    fit.add_argument("--folds", type=at_least(2), default=5, help="GroupKFold folds (groups = conversations)")
    fit.add_argument("--normalization", default="minmax")
    fit.add_argument("--rank-depth", type=at_least(0), default=50)
    fit.add_argument("--c", type=_positive, default=1.0, help="inverse regularization strength")
    fit.set_defaults(func=_fit)

    heldout = sub.add_parser(
        "heldout", help="choose settings on half the conversations, report on the other half"
    )
    _common(heldout)
    heldout.add_argument("--ingest", choices=("facts", "events"), default="events")
    heldout.add_argument(
        "--candidates",
        default=None,
        help='JSON (or a file of it): name -> retrieval object, e.g. {"default": {}}',
    )
    heldout.add_argument(
        "--split", default=None, help="comma list of half A's conversation ids (default: first half)"
    )
    heldout.add_argument("--budget", type=int, default=1200, help="the budget the choice is made at")
    heldout.add_argument("--budgets", default="600,1200,2400", help="budgets of the held-out table")
    heldout.add_argument("--metric", default="recall_in_context_whole")
    heldout.add_argument("--out", default=None, help="runs directory (default evals/runs)")
    heldout.set_defaults(func=_heldout)

    gate = sub.add_parser("gate", help="run the CI eval gate and compare with evals/floors.json")
    gate.add_argument(
        "--backend",
        action="append",
        choices=("sqlite", "postgres"),
        help="the backend(s) to gate (default: both); repeat for several",
    )
    gate.add_argument("--write-measured", action="store_true", help="record SQLite's new measurements")
    gate.set_defaults(func=_gate)
