from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from engine.errors import InvalidInput
from evals.fit import (
    ComponentRow,
    FitConfig,
    coefficients_to_weights,
    conversation_folds,
    fit_weights,
    mean_mrr,
    run_fit,
)
from tests.evals._tiny import tiny_dataset


def test_coefficients_to_weights_clips_and_normalizes() -> None:
    w = coefficients_to_weights([2.0, -1.0, 1.0, 0.0, 1.0])
    assert w == {
        "semantic": 2 / 4,
        "bm25": 0.0,
        "graph_prior": 1 / 4,
        "recency_decay": 0.0,
        "confidence": 1 / 4,
    }
    with pytest.raises(InvalidInput):
        coefficients_to_weights([-1.0, 0.0, -2.0, 0.0, 0.0])


def test_mean_mrr_by_hand() -> None:
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.2, 0.0]])
    y = np.array([0, 1, 0, 1])
    qids = ["a", "a", "a", "b"]
    # weights (1, 0): question a ranks rows 0, 2, 1 -> positive at rank 3; b: rank 1
    assert mean_mrr(x, y, qids, [1.0, 0.0]) == pytest.approx((1 / 3 + 1) / 2)
    # weights (0, 1): a ranks row 1 first
    assert mean_mrr(x, y, qids, [0.0, 1.0]) == pytest.approx((1 + 1) / 2)


def test_folds_never_share_a_conversation() -> None:
    groups = ["a", "a", "b", "c", "c", "c", "d", "e"]
    folds = list(conversation_folds(groups, 3))
    assert len(folds) == 3
    seen_test: set[str] = set()
    for train, test in folds:
        train_g = {groups[i] for i in train}
        test_g = {groups[i] for i in test}
        assert not train_g & test_g
        seen_test |= test_g
    assert seen_test == set(groups)
    with pytest.raises(InvalidInput):
        list(conversation_folds(["a", "a"], 2))


def _rows(seed: int = 0) -> list[ComponentRow]:
    """Evidence rows have a high bm25 norm; every other channel is noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for conv in range(6):
        for q in range(5):
            for m in range(10):
                label = int(m < 2)
                norms = rng.uniform(0, 1, 5)
                norms[1] = rng.uniform(0.6, 1.0) if label else rng.uniform(0.0, 0.5)
                rows.append(
                    ComponentRow(
                        conversation_id=f"c{conv}",
                        question_id=f"c{conv}:q{q}",
                        memory_id=f"m{m}",
                        turn_id=None,
                        norms=tuple(norms),
                        label=label,
                    )
                )
    return rows


def test_fit_learns_the_informative_channel() -> None:
    result = fit_weights(_rows(), folds=3)
    assert max(result.weights, key=lambda k: result.weights[k]) == "bm25"
    assert result.weights["bm25"] > 0.6
    assert sum(result.weights.values()) == pytest.approx(1.0, abs=1e-3)
    assert result.folds == 3 and result.n_conversations == 6 and result.n_rows == 300
    assert result.cv_auc > 0.9
    assert result.cv_mrr_learned > result.cv_mrr_collection
    assert result.preset_json() == {"retrieval": {"weights": result.weights, "normalization": "minmax"}}


def test_fit_needs_both_labels() -> None:
    rows = [r for r in _rows() if r.label == 0]
    with pytest.raises(InvalidInput):
        fit_weights(rows)


def test_run_fit_on_replayed_components() -> None:
    result = run_fit(FitConfig(folds=2, rank_depth=20), dataset=tiny_dataset(entities=4))
    assert result.n_conversations == 4 and result.folds == 2
    assert result.n_positive > 0
    assert sum(result.weights.values()) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("categories", ["nope", "{known},tmporal"])
def test_fit_refuses_an_unknown_category_before_collecting(
    categories: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--categories nope` collected no rows and then said it needs at least two conversations."""
    import evals.fit
    from evals.model import encode_dataset
    from server.cli import main

    def no_collection(*args: object, **kwargs: object) -> None:
        raise AssertionError("collected")

    monkeypatch.setattr(evals.fit, "collect_components", no_collection)
    data = tiny_dataset(entities=2)
    path = tmp_path / "tiny.json"
    path.write_bytes(encode_dataset(data))
    argv = ["eval", "fit", "--dataset", str(path), "--embedder", "hash", "--quiet"]
    assert main([*argv, "--categories", categories.format(known=data.questions[0].category)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown question categories [") and err.count("\n") == 1
    assert "nope" in err or "tmporal" in err


def test_a_fold_with_no_evidence_to_train_on_is_not_counted() -> None:
    # only c0 has evidence rows: the fold holding c0 out trains on one label and is skipped
    rows = [r if r.conversation_id == "c0" else msgspec.structs.replace(r, label=0) for r in _rows()]
    result = fit_weights(rows, folds=3)
    assert result.folds == len(result.fold_weights) == 2


def test_the_fitted_block_names_the_preset_its_rows_were_collected_under() -> None:
    # the weights reorder that preset's shortlist: pasted under another preset they mean something else
    result = run_fit(FitConfig(folds=2, rank_depth=20, preset="factual"), dataset=tiny_dataset(entities=4))
    assert result.preset_json()["retrieval"]["preset"] == "factual"
