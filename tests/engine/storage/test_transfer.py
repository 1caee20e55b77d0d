"""Export/import of one org as JSONL: exact round trips between backends, idempotency, atomicity."""

from __future__ import annotations

import base64
import io
import re
import struct
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import msgspec
import numpy as np
import pytest

from engine.embed.hash import HashEmbedder
from engine.embed.passages import passage_model, passages
from engine.errors import Conflict, InvalidInput
from engine.models import text_hash
from engine.storage import open_store
from engine.storage.base import EventQuery, Store
from engine.storage.transfer import (
    Counts,
    HeaderLine,
    decode_vector,
    encode_vector,
    export_org,
    import_org,
)
from tests.engine.storage.transfer_data import (
    MODEL,
    ORG,
    OTHER,
    T0,
    _m,
    fill,
    org_events,
    org_keys,
    org_memories,
    snapshot,
)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[dict[str, Store]]:
    opened = {
        "memory": open_store("memory"),
        "sqlite_a": open_store(f"sqlite://{tmp_path / 'a.db'}"),
        "sqlite_b": open_store(f"sqlite://{tmp_path / 'b.db'}"),
        "memory_b": open_store("memory"),
    }
    yield opened
    for s in opened.values():
        s.close()


def dump(store: Store, org: str = ORG, **kw: object) -> bytes:
    out = io.BytesIO()
    export_org(store, org, out, models=[MODEL], with_keys=True, now=T0, **kw)  # type: ignore[arg-type]
    return out.getvalue()


def load(store: Store, data: bytes, **kw: object) -> object:
    return import_org(store, io.BytesIO(data), **kw)  # type: ignore[arg-type]


def test_header_counts_and_order(stores: dict[str, Store]) -> None:
    src = stores["memory"]
    fill(src)
    lines = dump(src).splitlines()
    header = msgspec.json.decode(lines[0], type=HeaderLine)
    # 10 memories; 9 distinct texts with a vector (mem_0009 repeats mem_0001's text, mem_0010 has none)
    assert header.counts == Counts(memories=10, embeddings=8, events=3, api_keys=2)
    assert header.org_id == ORG and header.models == [MODEL] and header.exported_at == T0
    assert len(lines) == 1 + 10 + 8 + 3 + 2
    kinds = [msgspec.json.decode(line)["kind"] for line in lines[1:]]
    assert kinds[-5:] == ["event"] * 3 + ["api_key"] * 2
    mem_ids = [
        msgspec.json.decode(line)["memory"]["memory_id"] for line in lines if b'"kind":"memory"' in line
    ]
    # (timestamp, memory_id) order: 7 and 8 share a timestamp a day later
    assert mem_ids == [f"mem_{n:04d}" for n in (1, 2, 3, 4, 5, 6, 9, 10, 7, 8)]
    assert b"Not acme" not in dump(src) and b"evt_x" not in dump(src) and b"key_o" not in dump(src)


def test_json_keeps_int_float_bool_and_microseconds(stores: dict[str, Store]) -> None:
    src = stores["memory"]
    fill(src)
    text = dump(src).decode()
    assert '"object":5.0,' in text and '"object":5,' in text and '"object":true,' in text
    assert '"timestamp":"2024-05-06T07:08:09.123457Z"' in text  # T0 + 1 microsecond
    assert '"b":1.0' in text


def test_memory_to_sqlite_to_memory_is_exact(stores: dict[str, Store]) -> None:
    src, mid, dst = stores["memory"], stores["sqlite_a"], stores["memory_b"]
    fill(src)
    first = dump(src)
    load(mid, first)
    second = dump(mid)
    load(dst, second)
    assert second == first and dump(dst) == first  # byte for byte, header included
    for store in (mid, dst):
        assert snapshot(store) == snapshot(src)
        got = {m.memory_id: m for m in store.get_memories(ORG, [m.memory_id for m in org_memories()])}
        for want in org_memories():  # every field, and the Python type of `object`
            assert got[want.memory_id] == want
            assert type(got[want.memory_id].object) is type(want.object)
        assert store.count_memories(OTHER) == 0


def test_sqlite_to_sqlite_is_exact(stores: dict[str, Store]) -> None:
    a, b = stores["sqlite_a"], stores["sqlite_b"]
    fill(a)
    data = dump(a)
    load(b, data)
    assert dump(b) == data
    assert snapshot(b) == snapshot(a)
    vec = b.get_embeddings(MODEL, [text_hash("Alice is vegan")])[text_hash("Alice is vegan")]
    assert vec.dtype == np.float32 and vec.shape == (16,)


def test_reimport_changes_nothing_and_replaces_by_id(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    data = dump(src)
    first = load(dst, data)
    before = snapshot(dst)
    again = load(dst, data)
    assert snapshot(dst) == before
    assert dst.count_memories(ORG) == 10
    assert msgspec.to_builtins(first)["events"] == 3 and msgspec.to_builtins(again)["events"] == 0
    assert msgspec.to_builtins(again)["events_skipped"] == 3
    assert msgspec.to_builtins(again)["api_keys_skipped"] == 2
    assert msgspec.to_builtins(again)["memories"] == 0 and msgspec.to_builtins(again)["memories_kept"] == 10
    # a copy in the target older than the file's is replaced by it, not duplicated
    older = org_memories()[1]
    older = msgspec.structs.replace(
        older, text="edited", object=6, updated_at=older.updated_at - timedelta(1)
    )
    dst.put_memories([older])
    load(dst, data)
    assert snapshot(dst) == before


def test_revocation_in_file_is_applied_to_existing_key(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    dst.create_api_key(msgspec.structs.replace(org_keys()[1], revoked_at=None))
    load(dst, dump(src))
    assert {k.key_id: k.revoked_at for k in dst.list_api_keys(ORG)} == {
        "key_a": None,
        "key_b": org_keys()[1].revoked_at,
    }


def test_import_into_another_org(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    load(dst, dump(src), org_id="copy")
    assert dst.count_memories(ORG) == 0 and dst.count_memories("copy") == 10
    assert {m.org_id for m in dst.get_memories("copy", ["mem_0001", "mem_0005"])} == {"copy"}
    assert [k.org_id for k in dst.list_api_keys("copy")] == ["copy", "copy"]
    reexport = dump(dst, org="copy").replace(b'"org_id":"copy"', b'"org_id":"acme"')
    assert reexport == dump(src)


def test_a_bad_line_changes_nothing_whatever_the_batch_size(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    lines = dump(src).splitlines(keepends=True)
    broken = b"".join(lines[:-1]) + b'{"kind":"memory","memory":{"memory_id":"x"}}\n'
    for batch_size in (0, 5, 1):  # the whole file is checked before the first batch is written
        with pytest.raises(InvalidInput, match="line 24"):
            load(dst, broken, batch_size=batch_size)
        assert dst.count_memories(ORG) == 0 and dst.list_api_keys(ORG) == []
        assert dst.get_embeddings(MODEL, [text_hash("Alice is vegan")]) == {}
    load(dst, b"".join(lines))  # the complete file then imports
    assert snapshot(dst) == snapshot(src)


@pytest.mark.parametrize("batch_size", [1, 5, 1000])
def test_a_file_cut_at_a_line_boundary_changes_nothing(stores: dict[str, Store], batch_size: int) -> None:
    """Cut before its events, the file's memories would go in without them (a superseded fact without
    the event that superseded it): the header's counts refuse it before anything is written."""
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    lines = dump(src).splitlines(keepends=True)
    first_event = next(i for i, line in enumerate(lines) if b'"kind":"event"' in line)
    with pytest.raises(InvalidInput, match="header says"):
        load(dst, b"".join(lines[:first_event]), batch_size=batch_size)
    assert dst.count_memories(ORG) == 0 and dst.org_ids() == []
    assert dst.get_embeddings(MODEL, [text_hash("Alice is vegan")]) == {}


def test_a_key_the_target_holds_for_another_org_changes_nothing(stores: dict[str, Store]) -> None:
    """Into `--org copy` of a store that holds the org already, the file's keys (hashes the target has
    for `acme`) conflict: found while checking, before the memories ahead of them are written."""
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    data = dump(src)
    load(dst, data)
    before = snapshot(dst)
    with pytest.raises(Conflict, match="its hash belongs to key 'key_a' of org 'acme'"):
        load(dst, data, org_id="copy", batch_size=2)
    assert dst.count_memories("copy") == 0 and "copy" not in dst.org_ids()
    assert snapshot(dst) == before


def test_a_key_id_the_target_holds_with_another_hash_changes_nothing(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    dst.create_api_key(msgspec.structs.replace(org_keys()[0], org_id="elsewhere", key_hash="another hash"))
    with pytest.raises(Conflict, match="holds another key of that id"):
        load(dst, dump(src), batch_size=2)
    assert dst.count_memories(ORG) == 0


def test_a_stream_is_read_twice_through_a_spool(stores: dict[str, Store]) -> None:
    """stdin cannot be read again: the first pass copies it (lines as they came, blank ones too)."""
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    lines = dump(src).splitlines(keepends=True)
    import_org(dst, iter([lines[0], b"\n", *lines[1:]]))  # an iterator: read once
    assert snapshot(dst) == snapshot(src)
    broken = iter([*lines[:-1], b"\n", b"{}\n"])
    with pytest.raises(InvalidInput, match="line 25"):
        import_org(stores["sqlite_b"], broken, batch_size=1)
    assert stores["sqlite_b"].count_memories(ORG) == 0


def test_header_is_required_and_checked(stores: dict[str, Store]) -> None:
    dst = stores["sqlite_a"]
    fill(stores["memory"])
    with pytest.raises(InvalidInput, match="first line"):
        load(dst, b"".join(dump(stores["memory"]).splitlines(keepends=True)[1:]))
    bad = dump(stores["memory"]).replace(b'"version":1', b'"version":99', 1)
    with pytest.raises(InvalidInput, match="version 99"):
        load(dst, bad)
    mixed = (
        dump(stores["memory"]).splitlines(keepends=True)[0]
        + b'{"kind":"api_key","api_key":{"key_id":"k","org_id":"zzz","key_hash":"x","scopes":[],'
        b'"created_at":"2024-01-01T00:00:00Z"}}\n'
    )
    with pytest.raises(InvalidInput, match="org 'zzz'"):
        load(dst, mixed)


def test_without_vectors(stores: dict[str, Store]) -> None:
    src = stores["memory"]
    fill(src)
    header = msgspec.json.decode(dump(src, with_vectors=False).splitlines()[0], type=HeaderLine)
    assert header.counts.embeddings == 0 and header.models == [] and not header.with_vectors


def test_a_long_memorys_passage_vectors_move_with_it(stores: dict[str, Store]) -> None:
    """The semantic channel scores a long memory by its passages too: their vectors leave with it."""
    src, dst = stores["sqlite_a"], stores["memory"]
    text = " ".join(f"Sentence number {i} says something about the garden." for i in range(20))
    assert passages(text)
    src.put_memories([_m(900, text)])
    parts = list(passages(text))
    vectors = HashEmbedder(16).embed([text, *parts])
    src.put_embeddings(MODEL, {text_hash(text): vectors[0]})
    src.put_embeddings(
        passage_model(MODEL), {text_hash(p): v for p, v in zip(parts, vectors[1:], strict=True)}
    )
    data = dump(src)
    header = msgspec.json.decode(data.splitlines()[0], type=HeaderLine)
    assert header.counts.embeddings == 1 + len(parts) and header.models == [MODEL]
    load(dst, data)
    assert set(dst.get_embeddings(MODEL, [text_hash(text)])) == {text_hash(text)}
    moved = dst.get_embeddings(passage_model(MODEL), [text_hash(p) for p in parts])
    assert set(moved) == {text_hash(p) for p in parts}


def test_vector_codec_is_exact() -> None:
    vec = np.array([0.1, -2.5, 1e-30, 3.4e38], dtype=np.float32)
    assert encode_vector(vec) == base64.b64encode(struct.pack("<4f", 0.1, -2.5, 1e-30, 3.4e38)).decode()
    assert decode_vector(encode_vector(vec), 4).tobytes() == vec.tobytes()
    with pytest.raises(InvalidInput):
        decode_vector(encode_vector(vec), 3)


@pytest.mark.parametrize(
    ("vector", "problem"),
    [
        ("!!!notbase64", "vector is not base64"),
        ("d\u00e9j\u00e0", "vector is not base64"),
        (encode_vector(np.ones(3, dtype=np.float32)), "vector has 3 values, expected 16"),
    ],
)
def test_a_bad_vector_is_refused_naming_its_line(stores: dict[str, Store], vector: str, problem: str) -> None:
    """A vector that was not base64 raised binascii.Error out of the import (a traceback, exit 1)."""
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    lines = dump(src).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"kind":"embedding"' in line)
    record = msgspec.json.decode(lines[at])
    lines[at] = msgspec.json.encode({**record, "vector": vector}) + b"\n"
    with pytest.raises(InvalidInput, match=f"^line {at + 1}: {problem}"):
        load(dst, b"".join(lines))
    assert dst.count_memories(ORG) == 0


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("memory_id", "", "Expected `str` of length >= 1 - at `$.memory.memory_id`"),
        ("memory_id", "mem/1", "Expected `str` matching regex '^[^/]+$' - at `$.memory.memory_id`"),
        ("memory_id", "m" * 129, "Expected `str` of length <= 128 - at `$.memory.memory_id`"),
        ("text", "", "memory.text must not be blank"),
        ("text", " \u200b ", "memory.text must not be blank"),
        ("tags", ["home", " "], "memory.tags[1] must not be blank"),
        ("predicate", " ", "memory.predicate must not be blank"),
        ("keys", ["no bar"], "memory.keys[0]: a conflict key has the shape"),
        ("entity_id", " ", "memory.entity_id must not be blank"),
        ("agent_id", "\t", "memory.agent_id must not be blank"),
        ("namespace", " \u200b", "memory.namespace must not be blank"),
    ],
)
def test_a_memory_the_api_would_refuse_is_refused_naming_its_line(
    stores: dict[str, Store], field: str, value: object, problem: str
) -> None:
    """An empty id or text went in: a memory no route could address (PATCH, DELETE) or the API could
    not have written."""
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    lines = dump(src).splitlines(keepends=True)
    record = msgspec.json.decode(lines[1])
    lines[1] = msgspec.json.encode({**record, "memory": {**record["memory"], field: value}}) + b"\n"
    with pytest.raises(InvalidInput, match=f"^line 2: {re.escape(problem)}"):
        load(dst, b"".join(lines))
    assert dst.count_memories(ORG) == 0


def test_events_keep_ids_and_order(stores: dict[str, Store]) -> None:
    src, dst = stores["memory"], stores["sqlite_a"]
    fill(src)
    load(dst, dump(src))
    got = [e for _, e in dst.list_events(ORG, EventQuery())]
    assert got == org_events()


def test_a_text_that_is_both_a_memory_and_a_passage_exports_both_vectors(stores: dict[str, Store]) -> None:
    """The passage vectors of one model name and the memory vectors of another are kept apart: a short
    memory whose text is a sentence of a long one keeps its own vector in the file, and the long one
    keeps that passage's."""
    src, dst = stores["sqlite_a"], stores["memory"]
    sentence = "I bought an espresso machine for the kitchen."
    long = (
        sentence + " " + " ".join(f"Sentence number {i} says something about the garden." for i in range(20))
    )
    assert sentence in passages(long)
    src.put_memories([_m(901, sentence), _m(902, long)])
    parts = list(passages(long))
    vectors = HashEmbedder(16).embed([sentence, long, *parts])
    src.put_embeddings(MODEL, {text_hash(sentence): vectors[0], text_hash(long): vectors[1]})
    src.put_embeddings(
        passage_model(MODEL), {text_hash(p): v for p, v in zip(parts, vectors[2:], strict=True)}
    )
    load(dst, dump(src, page=1))  # one memory a page: the short one is seen before the long one
    assert set(dst.get_embeddings(MODEL, [text_hash(sentence), text_hash(long)])) == {
        text_hash(sentence),
        text_hash(long),
    }
    assert set(dst.get_embeddings(passage_model(MODEL), [text_hash(p) for p in parts])) == {
        text_hash(p) for p in parts
    }
