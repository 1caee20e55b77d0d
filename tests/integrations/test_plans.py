"""`loci.integrations.plans.batches`: drafts split into the requests POST /v0/memories takes, in order."""

from __future__ import annotations

import msgspec

from loci.client import MemoryCreate
from loci.integrations.plans import batches
from loci.wire.memories import MemoryBatch
from loci.wire.writes import MAX_BATCH, MAX_BODY_BYTES


def _draft(i: int, size: int = 0) -> MemoryCreate:
    return MemoryCreate(type="note", text=f"n{i}", metadata={"blob": "x" * size})


def test_batches_keep_the_order_and_the_item_limit() -> None:
    drafts = [_draft(i) for i in range(MAX_BATCH * 2 + 1)]
    runs = batches(drafts)
    assert [len(run) for run in runs] == [MAX_BATCH, MAX_BATCH, 1]
    assert [d for run in runs for d in run] == drafts


def test_batches_keep_each_body_within_the_byte_limit() -> None:
    drafts = [_draft(i, 90_000 + i) for i in range(150)]
    runs = batches(drafts)
    assert [d for run in runs for d in run] == drafts and len(runs) == 2
    assert all(len(msgspec.json.encode(MemoryBatch(items=run))) <= MAX_BODY_BYTES for run in runs)
    body = len(msgspec.json.encode(MemoryBatch(items=runs[0])))
    assert body + len(msgspec.json.encode(runs[1][0])) + 1 > MAX_BODY_BYTES  # the first run is full


def test_a_draft_too_large_for_any_request_goes_alone() -> None:
    huge, small = _draft(0, MAX_BODY_BYTES), _draft(1)
    assert batches([small, huge, small]) == [[small], [huge], [small]]
    assert batches([]) == []
