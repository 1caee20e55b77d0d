"""`loci eval fit`: learn channel weights from the score components of retrieved candidates.

    run_fit(FitConfig(dataset="locomo")) -> FitResult  (weights ready for `retrieval.weights`)

1. Collect (`collect_components`): each conversation is written once; each question is asked with
   every channel switched on (weights 0.2 each, `top_k` = `rank_depth`) and each returned match
   becomes a row: its five normalized channel values (`matches[].score_components[c].norm`, in
   `engine.retrieval.presets.CHANNELS` order) and a label, 1 when the match maps to an evidence turn of the
   question. Boosts are left out (they are preset data, not channels). The rows are the top
   `rank_depth` of that collection ranking, so the fit learns to reorder that shortlist.
2. Fit (`fit_weights`): logistic regression (scikit-learn, class-balanced) on the rows; the
   coefficients, clipped at 0 and divided by their sum, are the weights (the score is linear in
   the norms, so the ranking the model implies is the ranking those weights give).
3. Cross-validate by conversation (`GroupKFold`, groups = conversation ids, so no conversation is
   on both sides): held-out ROC AUC of the classifier, and held-out MRR of ranking each
   question's candidates by the learned weights next to the collection weights.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from engine.errors import InvalidInput
from evals.loaders import load_dataset
from evals.model import Dataset, Question
from evals.replay import (
    ORG_ID,
    EngineBackend,
    Loaded,
    ReplayConfig,
    assemble_body,
    check_config,
)
from evals.replay_many import CHANNELS
from evals.run import check_questions, question_filter

COLLECTION_WEIGHTS: dict[str, float] = {c: 1.0 / len(CHANNELS) for c in CHANNELS}
F64 = npt.NDArray[np.float64]


class ComponentRow(msgspec.Struct, frozen=True, kw_only=True):
    conversation_id: str
    question_id: str
    memory_id: str
    turn_id: str | None
    norms: tuple[float, ...]  # CHANNELS order
    label: int  # 1 = the match is (from) an evidence turn


class FitConfig(msgspec.Struct, frozen=True, kw_only=True):
    dataset: str = "synthetic"
    folds: int = 5
    normalization: str = "minmax"
    preset: str = "balanced"
    rank_depth: int = 50
    limit: int | None = None
    limit_questions: int | None = None
    categories: tuple[str, ...] = ()
    embedder: str = "hash"
    store: str = "memory"
    c: float = 1.0


class FitResult(msgspec.Struct, kw_only=True):
    weights: dict[str, float]
    coefficients: dict[str, float]
    normalization: str
    folds: int  # the folds fitted and scored (a fold whose training rows hold one label is skipped)
    cv_auc: float
    cv_auc_std: float
    cv_mrr_learned: float
    cv_mrr_collection: float
    fold_weights: list[dict[str, float]]
    n_rows: int
    n_positive: int
    n_questions: int
    n_conversations: int
    seconds: float = 0.0
    preset: str | None = None  # the preset the rows were collected under (`run_fit` sets it)

    def preset_json(self) -> dict[str, Any]:
        block: dict[str, Any] = {"weights": self.weights, "normalization": self.normalization}
        if self.preset is not None:
            block = {"preset": self.preset, **block}
        return {"retrieval": block}


# --- collection -------------------------------------------------------------------------------
def question_rows(
    backend: EngineBackend, loaded: Loaded, question: Question, config: ReplayConfig
) -> list[ComponentRow]:
    """The shortlist of one question (top_k = config.rank_depth) as component rows."""
    from engine.retrieval.options import AssembleRequest
    from engine.retrieval.pipeline import run_assemble

    store, cache = loaded.handle
    body = assemble_body(loaded, question, config, top_k=config.rank_depth, ranking_only=True)
    request = msgspec.convert(body, AssembleRequest, strict=False)
    response = run_assemble(
        store,
        cache,
        org_id=ORG_ID,
        agent_id=None,
        request=request,
        request_id="req_eval_fit",
        now=backend.clock(),
    ).response
    evidence = set(question.evidence)
    rows = []
    for m in response.matches or []:
        comps = m.score_components
        turn = m.metadata.get("turn_id") if m.metadata else None
        turn = turn or loaded.memory_to_turn.get(m.memory_id)
        rows.append(
            ComponentRow(
                conversation_id=question.conversation_id,
                question_id=question.question_id,
                memory_id=m.memory_id,
                turn_id=turn,
                norms=tuple(float(comps[c].norm) if c in comps else 0.0 for c in CHANNELS),
                label=int(turn is not None and turn in evidence),
            )
        )
    return rows


def collect_components(
    dataset: Dataset,
    config: ReplayConfig,
    *,
    backend: EngineBackend | None = None,
    questions: Callable[[Question], bool] | None = None,
    limit_questions: int | None = None,
    progress: bool = False,
) -> list[ComponentRow]:
    """Rows for every question with evidence; each conversation is written once."""
    engine = backend or EngineBackend(config)
    keep = questions or (lambda q: q.answerable and bool(q.evidence))
    plan = []
    for conv in dataset.conversations:
        asked = [q for q in dataset.questions_for(conv.conversation_id) if keep(q) and q.evidence]
        if asked:
            plan.append((conv, asked[:limit_questions] if limit_questions is not None else asked))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=sum(len(a) for _, a in plan), unit="q", desc="components")
    rows: list[ComponentRow] = []
    try:
        for conv, asked in plan:
            loaded = engine.load(conv, config)
            try:
                for q in asked:
                    rows.extend(question_rows(engine, loaded, q, config))
                    if bar is not None:
                        bar.update(1)
            finally:
                engine.release(loaded)
    finally:
        if bar is not None:
            bar.close()
    return rows


def collection_config(config: FitConfig) -> ReplayConfig:
    return ReplayConfig(
        preset=config.preset,
        normalization=config.normalization,
        weights=dict(COLLECTION_WEIGHTS),
        rank_depth=config.rank_depth,
        embedder=config.embedder,
        store=config.store,
    )


# --- fitting ----------------------------------------------------------------------------------
def matrices(rows: Sequence[ComponentRow]) -> tuple[F64, npt.NDArray[np.int64], list[str], list[str]]:
    """(X (n, 5), y (n,), conversation id per row, question id per row)."""
    x = np.asarray([r.norms for r in rows], dtype=np.float64).reshape(len(rows), len(CHANNELS))
    y = np.asarray([r.label for r in rows], dtype=np.int64)
    return x, y, [r.conversation_id for r in rows], [r.question_id for r in rows]


def coefficients_to_weights(coef: Sequence[float]) -> dict[str, float]:
    """Clip at 0 and divide by the sum; all non-positive raises `InvalidInput` (nothing learned)."""
    clipped = [max(0.0, float(c)) for c in coef]
    total = sum(clipped)
    if total <= 0.0:
        raise InvalidInput("no channel has a positive coefficient; nothing to learn from these labels")
    return {c: round(v / total, 4) for c, v in zip(CHANNELS, clipped, strict=True)}


def conversation_folds(
    groups: Sequence[str], folds: int
) -> Iterator[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]:
    """GroupKFold over conversations: no conversation has rows on both sides of a fold."""
    from sklearn.model_selection import GroupKFold

    n_groups = len(set(groups))
    if n_groups < 2:
        raise InvalidInput("cross-validation by conversation needs at least two conversations")
    splitter = GroupKFold(n_splits=min(folds, n_groups))
    dummy = np.zeros(len(groups))
    yield from splitter.split(dummy, dummy, groups=list(groups))


def mean_mrr(x: F64, y: npt.NDArray[np.int64], qids: Sequence[str], weights: Sequence[float]) -> float:
    """Mean reciprocal rank of the first positive row per question when rows are scored x @ w
    (ties keep row order; questions without a positive row count 0)."""
    scores = x @ np.asarray(weights, dtype=np.float64)
    by_q: dict[str, list[int]] = {}
    for i, q in enumerate(qids):
        by_q.setdefault(q, []).append(i)
    total = 0.0
    for idx in by_q.values():
        order = sorted(idx, key=lambda i: -scores[i])
        total += next((1.0 / r for r, i in enumerate(order, start=1) if y[i] == 1), 0.0)
    return total / len(by_q) if by_q else float("nan")


def _logreg(x: F64, y: npt.NDArray[np.int64], c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, class_weight="balanced", max_iter=2000).fit(x, y)


def fit_weights(
    rows: Sequence[ComponentRow], *, folds: int = 5, c: float = 1.0, normalization: str = "minmax"
) -> FitResult:
    from sklearn.metrics import roc_auc_score

    x, y, groups, qids = matrices(rows)
    if y.min(initial=1) == y.max(initial=0):
        raise InvalidInput("the rows need both evidence and non-evidence matches")
    aucs: list[float] = []
    mrr_learned: list[float] = []
    mrr_base: list[float] = []
    fold_weights: list[dict[str, float]] = []
    collection = [COLLECTION_WEIGHTS[ch] for ch in CHANNELS]
    n_folds = 0
    for train, test in conversation_folds(groups, folds):
        if len(set(y[train].tolist())) < 2:  # nothing to fit: not one of the folds the means are over
            continue
        n_folds += 1
        model = _logreg(x[train], y[train], c)
        if len(set(y[test].tolist())) == 2:
            aucs.append(float(roc_auc_score(y[test], model.decision_function(x[test]))))
        try:
            w = coefficients_to_weights(model.coef_[0])
        except InvalidInput:
            w = dict(COLLECTION_WEIGHTS)
        fold_weights.append(w)
        test_q = [qids[i] for i in test]
        mrr_learned.append(mean_mrr(x[test], y[test], test_q, [w[ch] for ch in CHANNELS]))
        mrr_base.append(mean_mrr(x[test], y[test], test_q, collection))
    final = _logreg(x, y, c)
    return FitResult(
        weights=coefficients_to_weights(final.coef_[0]),
        coefficients={ch: float(v) for ch, v in zip(CHANNELS, final.coef_[0], strict=True)},
        normalization=normalization,
        folds=n_folds,
        cv_auc=float(np.mean(aucs)) if aucs else float("nan"),
        cv_auc_std=float(np.std(aucs)) if aucs else float("nan"),
        cv_mrr_learned=float(np.mean(mrr_learned)) if mrr_learned else float("nan"),
        cv_mrr_collection=float(np.mean(mrr_base)) if mrr_base else float("nan"),
        fold_weights=fold_weights,
        n_rows=len(rows),
        n_positive=int(y.sum()),
        n_questions=len(set(qids)),
        n_conversations=len(set(groups)),
    )


def run_fit(config: FitConfig, *, dataset: Dataset | None = None, progress: bool = False) -> FitResult:
    started = time.perf_counter()
    check_config(collection_config(config))
    data = dataset if dataset is not None else load_dataset(config.dataset)
    if config.limit is not None:
        data = data.limit(config.limit)
    check_questions(data, config)
    selected = question_filter(config)

    def keep(q: Question) -> bool:
        return selected(q) and bool(q.evidence)  # rows are labelled by evidence turns

    rows = collect_components(
        data,
        collection_config(config),
        questions=keep,
        limit_questions=config.limit_questions,
        progress=progress,
    )
    result = fit_weights(rows, folds=config.folds, c=config.c, normalization=config.normalization)
    result.preset = config.preset
    result.seconds = time.perf_counter() - started
    return result


def print_fit(result: FitResult, out: Any) -> None:
    print(
        f"rows {result.n_rows} ({result.n_positive} evidence) from {result.n_questions} questions in "
        f"{result.n_conversations} conversations; {result.folds}-fold CV by conversation",
        file=out,
    )
    print(
        f"held-out ROC AUC {result.cv_auc:.3f} ± {result.cv_auc_std:.3f}; held-out MRR "
        f"{result.cv_mrr_learned:.3f} with the learned weights vs {result.cv_mrr_collection:.3f} "
        f"with the collection weights (0.2 each)",
        file=out,
    )
    print("\npreset (paste into the assemble request):", file=out)
    print(msgspec.json.format(msgspec.json.encode(result.preset_json()), indent=2).decode(), file=out)


__all__: Sequence[str] = (
    "ComponentRow",
    "FitConfig",
    "FitResult",
    "coefficients_to_weights",
    "collect_components",
    "conversation_folds",
    "fit_weights",
    "mean_mrr",
    "print_fit",
    "run_fit",
)
