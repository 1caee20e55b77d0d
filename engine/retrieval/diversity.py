"""Diversity limits over a ranked list: at most `max_per_predicate` memories per predicate and at most
`max_per_source` per source. Walks the ranking best first; a memory over a limit is dropped (counted
in `clamped_by_predicate` / `clamped_by_source`). Pinned memories (must_include) are never dropped, but
they count toward the limits.

The source of a memory is the first of: provenance["source_turn"], provenance["source"],
provenance["document_id"], metadata["source"], metadata["document_id"], metadata["source_id"].
A memory without one has no source limit; seed snippets have none either.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import msgspec

from engine.models import Memory

SOURCE_KEYS: tuple[tuple[str, str], ...] = (
    ("provenance", "source_turn"),
    ("provenance", "source"),
    ("provenance", "document_id"),
    ("metadata", "source"),
    ("metadata", "document_id"),
    ("metadata", "source_id"),
)


class DiversityResult(msgspec.Struct, kw_only=True):
    kept: list[str]
    clamped_by_predicate: int = 0
    clamped_by_source: int = 0


def source_of(memory: Memory) -> str | None:
    if not memory.provenance and not memory.metadata:
        return None
    for where, key in SOURCE_KEYS:
        bag = memory.provenance if where == "provenance" else memory.metadata
        value = bag.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


def diversify(
    ranked: Sequence[str],
    memories: Mapping[str, Memory],
    *,
    max_per_predicate: int,
    max_per_source: int,
    pinned: Collection[str] = (),
) -> DiversityResult:
    per_pred: dict[str, int] = {}
    per_src: dict[str, int] = {}
    out = DiversityResult(kept=[])
    for mid in ranked:
        m = memories.get(mid)
        if m is None:  # seed snippet
            out.kept.append(mid)
            continue
        pred = m.predicate
        src = source_of(m)
        is_pinned = mid in pinned
        if not is_pinned:
            if pred is not None and per_pred.get(pred, 0) >= max_per_predicate:
                out.clamped_by_predicate += 1
                continue
            if src is not None and per_src.get(src, 0) >= max_per_source:
                out.clamped_by_source += 1
                continue
        if pred is not None:
            per_pred[pred] = per_pred.get(pred, 0) + 1
        if src is not None:
            per_src[src] = per_src.get(src, 0) + 1
        out.kept.append(mid)
    return out
