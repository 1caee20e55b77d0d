"""Read-after-write as a property: a Hypothesis state machine that drives random request sequences
over every write door and every read of the API, against the plain model of tests/server/rw_model.py.

Rules are named after the requests they send (a failure prints the sequence, and each write's
concrete request and answer). After every step the invariant lists both orgs (on the worker that did
not write), compares the listing with the model, checks one value per single-valued key per space at
every time, that every stored text has its vector, that each id the last write named exists, and that
each memory the last write stored or changed is found by a recall of its own text in its own scope.
The teardown recalls every memory once more.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

import msgspec
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from engine.timeutil import utcnow
from engine.write.supersession import SPACE_METADATA, VALUE_METADATA
from engine.write.turns import subject_for
from server.mem0.records import RESERVED_KEYS
from tests.server.rw_cluster import CLUSTERS, Api, Failed
from tests.server.rw_model import (
    ORGS,
    Model,
    Reader,
    Row,
    Space,
    Written,
    returned_problems,
    snapshot_problems,
    timeline_problems,
)

ASSEMBLE = "/v0/context/assemble"
#: half of the turns say where the user lives, so that values of one key meet often
RESIDENCE = (
    "I live in Paris.",
    "I live in Rome.",
    "I moved to Lisbon.",
    "I don't live in Paris anymore.",
    "I live in Paris. Actually, I moved to Rome.",
)
SENTENCES = (
    "I work at Acme.",
    "I work at Initech.",
    "I work at Acme. I am 29 years old.",
    "I am 29 years old.",
    "I am 31 years old.",
    "My favorite color is green.",
    "My favorite color is blue.",
    "I no longer work at Acme.",
    "I like sushi.",
    "I don't like sushi anymore.",
    "My sister Anna lives in Rome.",
    "My sister Anna lives in Oslo.",
    "I went to the dentist on Tuesday.",
    "We talked about the garden.",
)
#: negations, which end nothing in a space that never held them: a /v1 add of only those stores the messages
NEGATIONS = ("I no longer work at Acme.", "I don't live in Paris anymore.", "I don't like sushi anymore.")
#: a text long enough to have passages (`engine.embed.passages`): their vectors are stored with it
LONG = " ".join(
    f"The weather report for the coast said rain on day {n}, and the ferries kept to their timetable."
    for n in range(8)
)
NOTES = ("Bob prefers green tea in the morning", "The project deadline is Friday", "I live in Paris.", LONG)
VALUES: tuple[tuple[str, str | int], ...] = (
    ("lives_in", "Paris"),
    ("lives_in", "ent:rome"),
    ("lives_in", "Lisbon"),
    ("works_at", "Acme"),
    ("favorite_color", "green"),
    ("favorite_color", "blue"),
    ("age", 29),
    ("age", 31),
    ("likes", "sushi"),
)
#: archive and unarchive twice as often: archive, write, unarchive are the paths of reconcile
PATCHES = ("archive", "unarchive") * 2 + ("tags", "metadata", "end_now", "expire_2100")
#: the channels that each find a memory by its own text
CHANNELS = ("semantic", "bm25")
RETURN_ALL = {"include_raw_matches": True, "include_structured_facts": True, "include_raw_memories": True}
HOME = Space("acme", "default", "ent:alice", None)
#: two orgs, two namespaces, agents a1 and a2 (and none), three entities; one space often, so that
#: writes meet there and supersede each other
SPACES = (HOME,) * 4 + (
    Space("acme", "default", "ent:alice", "a1"),
    Space("acme", "default", "ent:alice", "a2"),
    Space("acme", "default", "ent:bob", None),
    Space("acme", "work", "ent:alice", None),
    Space("globex", "default", "ent:alice", None),
    Space("globex", "work", "ent:bob", "a1"),
    Space("acme", "default", "sam", "a1"),  # an entity id that is not `ent:<id>` (mem0's user ids)
)


def mostly(first: Any, *others: Any, times: int = 3) -> st.SearchStrategy[Any]:
    """`first`, or one of `others`, each of which is `times` times less likely."""
    return st.sampled_from((first,) * times + others)


SPACE = st.sampled_from(SPACES)
MEM0_SPACE = st.sampled_from([s for s in SPACES if s.namespace == "default"])  # mem0 writes there
MCP_SPACE = st.sampled_from([s for s in SPACES if s.agent is None])  # MCP sends no X-Service-Agent
#: now, or a date of the past: writes arrive out of time order (as replays and backfills send them)
AS_OF = mostly(
    None,
    "2023-06-01T00:00:00Z",
    "2024-01-10T00:00:00Z",
    "2024-06-10T00:00:00Z",
    "2025-03-01T00:00:00Z",
    times=2,
)
TURN = st.builds(
    str.__add__,
    mostly("", "Caroline: ", "user: ", "assistant: ", times=5),
    st.sampled_from(RESIDENCE) | st.sampled_from(SENTENCES) | st.just(LONG),
)
KINDS = st.sampled_from(("note", "event", "document", "fact"))
NEWEST = mostly(0, 1, 2, 3, 4, 5, times=4)
FACT = st.tuples(st.booleans(), st.sampled_from(VALUES), st.booleans(), AS_OF)


def parse_time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value.replace("Z", "+00:00"))


def assembled_ids(answer: Any) -> list[str]:
    """Every memory an assemble answer shows: matches, structured facts and raw memories."""
    groups = (
        answer.get("matches", []),
        answer["context"].get("facts_struct", []),
        answer.get("raw_memories", []),
    )
    return [m["memory_id"] for group in groups for m in group]


class ReadAfterWrite(RuleBasedStateMachine):
    #: which servers each example runs on (a key of rw_cluster.CLUSTERS; see `machine_for`)
    store = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.cluster = CLUSTERS[self.store]()
        self.api = Api(self.cluster)
        self.model = Model()
        self.snapshots: dict[str, dict[str, Row]] = {org: {} for org in ORGS}
        self.writer = 0
        self.pending: list[str] = []  # memories the last write stored or changed
        self.named: list[str] = []  # ids the last write's outcome named
        self.gone: list[str] = []  # memories the last write deleted
        self.ok = True  # the last step passed its checks (the teardown sweep runs only then)
        self.clamped = 0  # how many matches the last recall's diversity limits dropped

    # --- plumbing ---------------------------------------------------------------------------------
    @property
    def reader(self) -> int:
        """The worker that did not take the last write (the same one when there is one worker)."""
        return (self.writer + 1) % self.cluster.workers

    def _write(self, method: str, path: str, org: str, **kw: Any) -> Any:
        self.ok = False
        self.writer = (self.writer + 1) % self.cluster.workers
        return self.api.call(self.writer, method, path, org, log=True, **kw)

    def _read(self, method: str, path: str, org: str, **kw: Any) -> Any:
        self.ok = False
        return self.api.call(self.reader, method, path, org, **kw)

    def _stored(
        self,
        memory_id: str,
        space: Space,
        door: str,
        *,
        type: str | None = None,  # noqa: A002
        text: str | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        archived: bool = False,
        exempt: bool = False,
    ) -> None:
        """Record a memory a write named (a SKIPPED outcome names one the model knows)."""
        self.named.append(memory_id)
        if memory_id in self.model.memories:
            self._named([memory_id], space, door)
            return
        self.model.memories[memory_id] = Written(
            space=space,
            type=type,
            text=text,
            door=door,
            archived=archived,
            tags=tags,
            metadata=metadata,
            exempt=exempt,
        )
        self.pending.append(memory_id)

    def _named(self, ids: Iterable[str], space: Space, what: str) -> None:
        """Ids an outcome names beside its own memory (superseded, disputed): known, of the write's space."""
        for memory_id in ids:
            self.named.append(memory_id)
            w = self.model.memories.get(memory_id)
            if w is None or w.space != space:
                raise Failed(f"{what} names {memory_id}, {'unknown' if w is None else 'of ' + str(w.space)}")

    def _resumed(self, ids: Iterable[str], space: Space, door: str) -> None:
        """Facts an outcome wrote anew: values it ended before they were said again (their text, tags and
        metadata, the fact's own, learnt on read)."""
        for memory_id in ids:
            self._stored(memory_id, space, f"{door} (resumed)", type="fact")

    def _resumed_by(self, space: Space, door: str) -> None:
        """A fact back from the archive or edited ends a value before a time that value was said again:
        the value holds again from then as a new fact (`provenance.resumes`), which that write stored."""
        for r in self._rows(space.org, {"namespace": space.namespace}):
            of = self.model.memories.get(str(r.provenance.get("resumes")))
            if r.memory_id not in self.model.memories and of is not None and of.space == r.space:
                self._resumed([r.memory_id], r.space, door)

    def _check(self, problems: list[str]) -> None:
        if problems:
            raise Failed("\n".join(problems))

    def _rows(self, org: str, params: dict[str, Any], agent: str | None = None) -> list[Row]:
        """Every memory GET /v0/memories lists for `params`, page by page."""
        rows: list[Row] = []
        query: dict[str, Any] = {"page_size": 200, **params}
        while True:
            page = self._read("GET", "/v0/memories", org, agent=agent, params=query)
            rows += msgspec.convert(page["items"], list[Row])
            if not page["next_cursor"]:
                return rows
            query["cursor"] = page["next_cursor"]

    def _recall(self, reader: Reader, query: str, as_of: datetime | None, what: str) -> dict[str, Any]:
        """The matches of a recall by id (checked: the reader's, current or valid at as_of)."""
        body: dict[str, Any] = {"query": query, "namespace": reader.namespace, "limit": 100}
        body["return"] = {"include_scores": True}
        if reader.entity is not None:
            body["entity_id"] = reader.entity
        if as_of is not None:
            body["as_of"] = as_of.isoformat()
        now = utcnow()
        answer = self._read("POST", "/v0/recall", reader.org, agent=reader.agent, body=body)
        found = {m["memory_id"]: m for m in answer["matches"]}
        self.clamped = sum(answer["retrieval_summary"]["diversity_actions"].values())
        self._check(
            returned_problems(found, reader, self.model, self.snapshots, as_of=as_of, now=now, what=what)
        )
        return found

    def _recall_own(self, row: Row, now: datetime) -> list[str]:
        """A current memory is found by a recall of its text in its space, by the semantic and the keyword
        channel both; a past one, at its own time."""
        if row.current(now):
            as_of = None
        elif not row.archived and row.valid_at(row.holds_from):
            as_of = row.holds_from
        else:
            return []
        reader = Reader(row.org_id, row.namespace, row.entity_id, row.agent_id)
        when = "" if as_of is None else f" as of {as_of.isoformat()}"
        found = self._recall(reader, row.text, as_of, f"recall of {row.memory_id}'s text{when}")
        match = found.get(row.memory_id)
        if match is None and self.clamped and any(m["text"] == row.text for m in found.values()):
            return []  # a twin (same text) was shown and the diversity limits dropped the rest
        if match is None:
            return [
                f"{row.memory_id} {row.text!r} ({row.status}, {row.space}) not found by recall of its text{when}"
            ]
        channels = match["score_components"]
        missed = [c for c in CHANNELS if channels.get(c, {}).get("raw", 0) <= 0]
        return [f"{row.memory_id} {row.text!r}: recall of its text{when} scores 0 on {c}" for c in missed]

    # --- the checks after every step ------------------------------------------------------------------
    def _refresh(self) -> None:
        for org in ORGS:
            self.snapshots[org] = {r.memory_id: r for r in self._rows(org, {})}
            for row in self.snapshots[org].values():
                w = self.model.memories.get(row.memory_id)
                if w is not None and w.space.org == org:
                    w.text = w.text if w.text is not None else row.text
                    w.type = w.type if w.type is not None else row.type
                    if w.door.endswith("(resumed)"):
                        w.tags = w.tags if w.tags is not None else row.tags
                        w.metadata = w.metadata if w.metadata is not None else row.metadata
                if row.status == "disputed":
                    self.model.disputed.add(row.memory_id)

    @invariant()
    def read_after_write(self) -> None:
        now = utcnow()
        self._refresh()
        rows = [r for org in ORGS for r in self.snapshots[org].values()]
        problems = [p for org in ORGS for p in snapshot_problems(self.model, org, self.snapshots[org])]
        problems += timeline_problems({r.memory_id: r for r in rows}, self.model, now)
        problems += [
            f"no vector for {t!r}" for t in self.cluster.missing_vectors(sorted({r.text for r in rows}))
        ]
        for memory_id in dict.fromkeys(self.named):
            w = self.model.memories[memory_id]
            if not w.deleted:
                self._read("GET", f"/v0/memories/{memory_id}", w.space.org)
        for memory_id in self.gone:
            self._read(
                "GET", f"/v0/memories/{memory_id}", self.model.memories[memory_id].space.org, expect=404
            )
        for memory_id in dict.fromkeys(self.pending):
            w = self.model.memories[memory_id]
            other = next(o for o in ORGS if o != w.space.org)
            self._read("GET", f"/v0/memories/{memory_id}", other, expect=404)
            row = self.snapshots[w.space.org].get(memory_id)
            if row is not None:
                problems += self._recall_own(row, now)
        self.pending.clear()
        self.named.clear()
        self.gone.clear()
        self._check(problems)
        self.ok = True

    def teardown(self) -> None:
        try:
            if self.ok:
                now = utcnow()
                self._check(
                    [
                        p
                        for org in ORGS
                        for r in self.snapshots[org].values()
                        for p in self._recall_own(r, now)
                    ]
                )
        finally:
            self.cluster.close()

    @initialize(turns=st.lists(TURN, min_size=1, max_size=3))
    def conversation(self, turns: list[str]) -> None:
        """Every example starts with a few turns of the agent loop in one space."""
        for turn in turns:
            self._assemble(HOME, turn, None, {})
            self.read_after_write()

    # --- writes -------------------------------------------------------------------------------------
    @rule(space=SPACE, kind=KINDS, text=st.sampled_from(NOTES), archived=mostly(False, True), timestamp=AS_OF)
    def post_memory(self, space: Space, kind: str, text: str, archived: bool, timestamp: str | None) -> None:
        body: dict[str, Any] = {
            "type": kind,
            "text": text,
            "entity_id": space.entity,
            "namespace": space.namespace,
        }
        body.update(tags=["t"], metadata={"k": 1}, archived=archived)
        if timestamp is not None:
            body["timestamp"] = timestamp
        made = self._write("POST", "/v0/memories", space.org, agent=space.agent, body=body)
        self._stored(
            made["memory_id"],
            space,
            "POST /v0/memories",
            type=kind,
            text=text,
            tags=["t"],
            metadata={"k": 1},
            archived=archived,
        )

    @rule(space=SPACE, items=st.lists(st.tuples(KINDS, st.sampled_from(NOTES)), min_size=1, max_size=3))
    def post_memories(self, space: Space, items: list[tuple[str, str]]) -> None:
        where = {"namespace": space.namespace, "entity_id": space.entity}
        body = {"items": [{**where, "type": k, "text": t} for k, t in items]}
        made = self._write("POST", "/v0/memories", space.org, agent=space.agent, body=body)["items"]
        for (k, t), m in zip(items, made, strict=True):
            self._stored(
                m["memory_id"], space, "POST /v0/memories items", type=k, text=t, tags=[], metadata={}
            )

    @rule(space=mostly(HOME, *SPACES), turn=TURN, as_of=AS_OF)
    def agent_turn(self, space: Space, turn: str, as_of: str | None) -> None:
        """The agent loop: a turn through assemble with the default ingest."""
        self._assemble(space, turn, as_of, {})

    @rule(
        space=SPACE,
        turn=TURN,
        store_turn=mostly("event", "none", "note", "fact", times=1),
        extract=st.booleans(),
        upsert_conflicts=mostly("smart", "off"),
        as_of=AS_OF,
    )
    def assemble(
        self,
        space: Space,
        turn: str,
        store_turn: str,
        extract: bool,
        upsert_conflicts: str,
        as_of: str | None,
    ) -> None:
        self._assemble(
            space,
            turn,
            as_of,
            {"store_turn": store_turn, "extract": extract, "upsert_conflicts": upsert_conflicts},
        )

    def _assemble(self, space: Space, turn: str, as_of: str | None, ingest: dict[str, Any]) -> None:
        body: dict[str, Any] = {"entity_id": space.entity, "turn": turn, "namespace": space.namespace}
        body.update(ingest=ingest, **{"return": RETURN_ALL})
        if as_of is not None:
            body["as_of"] = as_of
        now = utcnow()
        answer = self._write("POST", ASSEMBLE, space.org, agent=space.agent, body=body)
        self._check_shown(
            answer, Reader(*space), parse_time(as_of), now, "assemble"
        )  # the state before its writes
        mode = ingest.get("upsert_conflicts", "smart")
        self._turn_outcomes(
            answer["extracted"], space, "assemble", turn, ingest.get("store_turn", "event"), mode
        )

    def _turn_outcomes(
        self, extracted: Any, space: Space, door: str, turn: str, store_turn: str, mode: str
    ) -> None:
        upserts = list(extracted["upserts"])
        texts = {f["memory_id"]: f["text"] for f in extracted["facts"]}
        if store_turn != "none" and turn.strip():
            first = upserts.pop(0)
            # a stored turn carries `metadata.origin` "turn" (engine.write.turns)
            self._stored(
                first["memory_id"],
                space,
                door,
                type=store_turn,
                text=turn,
                tags=[],
                metadata={"origin": "turn"},
            )
        for u in upserts:
            if u["memory_id"] is not None:
                memory_id = u["memory_id"]
                text = texts.get(memory_id)
                self._stored(memory_id, space, door, type="fact", text=text, tags=[], exempt=mode == "off")
            self._named(u["supersedes"], space, door)
            self._resumed(u["resumed"], space, door)

    @rule(space=SPACE, items=st.lists(FACT, min_size=1, max_size=3), upsert_conflicts=mostly("smart", "off"))
    def batch_upsert(
        self,
        space: Space,
        items: list[tuple[bool, tuple[str, str | int], bool, str | None]],
        upsert_conflicts: str,
    ) -> None:
        body_items = []
        for about_anna, (predicate, value), negated, as_of in items:
            item: dict[str, Any] = {"type": "fact", "namespace": space.namespace, "entity_id": space.entity}
            subject = "ent:anna" if about_anna else subject_for(space.entity)
            item.update(subject=subject, predicate=predicate, negated=negated)
            item["object_num" if isinstance(value, int) else "object_text"] = value
            if as_of is not None:
                item["timestamp"] = as_of
            body_items.append(item)
        body = {"items": body_items, "upsert_conflicts": upsert_conflicts}
        answer = self._write("POST", "/v0/memories:batch_upsert", space.org, agent=space.agent, body=body)
        for u in answer["upserts"]:
            if u["memory_id"] is not None:
                exempt = upsert_conflicts == "off"
                self._stored(u["memory_id"], space, "batch_upsert", type="fact", tags=[], exempt=exempt)
            self._named(u["supersedes"] + u["disputed"], space, "batch_upsert")
            self._resumed(u["resumed"], space, "batch_upsert")
            if u["disputed"] and u["memory_id"] is not None:
                self.model.disputed.update([*u["disputed"], u["memory_id"]])

    @rule(
        space=MEM0_SPACE,
        route=st.sampled_from(("/v1/memories/", "/memories", "/v3/memories/add/")),
        turns=st.lists(TURN, min_size=1, max_size=2),
        infer=st.booleans(),
    )
    def mem0_add(self, space: Space, route: str, turns: list[str], infer: bool) -> None:
        messages = [{"role": "user", "content": t} for t in turns]
        body: dict[str, Any] = {"messages": messages, "user_id": space.entity, "infer": infer}
        if space.agent is not None:
            body["agent_id"] = space.agent
        results = self._write("POST", route, space.org, body=body)["results"]
        if not results:
            raise Failed(f"POST {route} answered no results")
        for item in results:
            if item["event"] in ("ADD", "UPDATE"):
                kind = None if infer else "event"
                self._stored(item["id"], space, f"POST {route}", type=kind, text=item["memory"])
            else:
                self._named([item["id"]], space, f"POST {route}")

    @rule(space=MCP_SPACE, text=TURN, kind=mostly("turn", "note", "event", "fact", times=1))
    def mcp_remember(self, space: Space, text: str, kind: str) -> None:
        arguments = {"text": text, "entity_id": space.entity, "kind": kind, "namespace": space.namespace}
        call = {"name": "remember", "arguments": arguments}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
        result = self._write("POST", "/mcp/", space.org, body=body)["result"]
        if result.get("isError"):
            raise Failed(f"MCP remember failed: {result['content']}")
        data = json.loads(result["content"][0]["text"])
        if kind != "turn":
            stored = data["stored"][0]
            self._stored(stored["memory_id"], space, "MCP remember", type=kind, text=text, tags=[])
            return
        extracted = {"upserts": data["upserts"], "facts": []}
        self._turn_outcomes(extracted, space, "MCP remember", text, "event", "smart")

    # --- writes to a memory already stored: the `newest`-th that qualifies (0 the newest, counting round) ---
    def _pick(
        self, newest: int, *keep: Callable[[str, Written], bool], deleted: bool = False
    ) -> tuple[str, Written] | None:
        """Of the live memories (deleted ones too with `deleted`), those the first `keep` admits, else the
        second's, and so on."""
        for admits in keep:
            found = [
                (i, w) for i, w in self.model.memories.items() if (deleted or not w.deleted) and admits(i, w)
            ]
            if found:
                memory_id, w = found[-1 - newest % len(found)]
                note(f"the memory is {memory_id} {w.text!r} ({w.door}, {w.space})")
                return memory_id, w
        return None

    @rule(newest=NEWEST, change=st.sampled_from(PATCHES))
    def patch(self, newest: int, change: str) -> None:
        """PATCH one of the newest memories. Archive and end_now prefer current facts of single-valued keys,
        unarchive archived ones whose key has another current value: archive, write, unarchive are the
        paths of reconcile."""
        if change == "unarchive":
            picked = self._pick(
                newest,
                self._rivalled,
                lambda i, w: w.archived and self._key(i) is not None,
                lambda i, w: w.archived,
            )
        elif change in ("archive", "end_now"):
            picked = self._pick(
                newest, lambda i, w: not w.archived and self._key(i) is not None, lambda i, w: True
            )
        else:
            picked = self._pick(newest, lambda i, w: True)
        if picked is not None:
            self._patch(*picked, change)

    @rule(newest=NEWEST, turn=TURN, as_of=AS_OF)
    def archived_while_told(self, newest: int, turn: str, as_of: str | None) -> None:
        """Archive one of the newest facts of a single-valued key, send a turn in its space, take the fact
        back from the archive: the shape of issue 28's bug 4, with any turn at any time."""
        picked = self._pick(newest, lambda i, w: not w.archived and self._key(i) is not None)
        if picked is None:
            return
        memory_id, w = picked
        self._patch(memory_id, w, "archive")
        self.read_after_write()
        self._assemble(w.space, turn, as_of, {})
        self.read_after_write()
        self._patch(memory_id, w, "unarchive")

    def _key(self, memory_id: str) -> tuple[Space, str] | None:
        """The space and single-valued key of a fact (as the last listing shows it)."""
        w = self.model.memories[memory_id]
        row = self.snapshots[w.space.org].get(memory_id)
        return None if row is None or row.single_key is None else (row.space, row.single_key)

    def _rivalled(self, memory_id: str, w: Written) -> bool:
        """An archived fact whose key has a current value in its space."""
        key = self._key(memory_id)
        now = utcnow()
        return (
            w.archived
            and key is not None
            and any(
                (r.space, r.single_key) == key and r.current(now)
                for r in self.snapshots[w.space.org].values()
            )
        )

    def _patch(self, memory_id: str, w: Written, change: str) -> None:
        row = self.snapshots[w.space.org].get(memory_id)
        now = utcnow()
        bodies: dict[str, dict[str, Any]] = {
            "tags": {"tags": ["patched"]},
            "metadata": {"metadata": {"patched": True}},
            "archive": {"archived": True},
            "unarchive": {"archived": False},
            "end_now": {"valid_to": now.isoformat()},
            "expire_2100": {"valid_to": "2100-01-01T00:00:00+00:00"},
        }
        body = bodies[change]
        if row is not None and "valid_to" in body:
            new_end = parse_time(body["valid_to"])
            assert new_end is not None
            if (row.valid_to is not None and row.valid_to <= new_end) or row.holds_from > new_end:
                note(f"PATCH {change} skipped: it would not end {memory_id} earlier")
                return  # the model keeps to writes that end a memory, never reopen one
        metadata = body.get("metadata", w.metadata)
        if "metadata" in body:  # the run, the app and a fact's value keys stay (engine.memory_service)
            before = self._read("GET", f"/v0/memories/{memory_id}", w.space.org)
            kept = SPACE_METADATA + (VALUE_METADATA if before["type"] == "fact" and before["subject"] else ())
            metadata = {**body["metadata"], **{k: v for k, v in before["metadata"].items() if k in kept}}
        self._write("PATCH", f"/v0/memories/{memory_id}", w.space.org, body=body)
        if change == "unarchive":
            self._resumed_by(w.space, "PATCH")
        w.tags = body.get("tags", w.tags)
        w.metadata = metadata
        w.archived = body.get("archived", w.archived)
        # a fact back from the archive may end others of its space: check them all again
        self.pending += [i for i, o in self.model.memories.items() if o.space == w.space and not o.deleted]

    @rule(newest=NEWEST, route=st.sampled_from(("/v0/memories/{}", "/v1/memories/{}", "/memories/{}")))
    def delete(self, newest: int, route: str) -> None:
        picked = self._pick(newest, lambda i, w: True)
        if picked is not None:
            memory_id, w = picked
            self._write("DELETE", route.format(memory_id), w.space.org)
            w.deleted = True
            self.gone.append(memory_id)

    @rule(
        newest=NEWEST,
        route=st.sampled_from(("/v1/memories/{}/", "/memories/{}")),
        change=st.sampled_from(("metadata", "The meeting moved to Monday", "User lives in Chicago")),
    )
    def mem0_update(self, newest: int, route: str, change: str) -> None:
        """A new text of a fact re-derives its value (another value of its key, or free text)."""
        picked = self._pick(newest, lambda i, w: True)
        if picked is None:
            return
        memory_id, w = picked
        body: dict[str, Any] = {"metadata": {"edited": True}} if change == "metadata" else {"text": change}
        if "metadata" in body:  # what Loci wrote itself (server.mem0.records) stays
            before = self._read("GET", f"/v0/memories/{memory_id}", w.space.org)["metadata"]
            w.metadata = {"edited": True, **{k: before[k] for k in RESERVED_KEYS if k in before}}
        self._write("PUT", route.format(memory_id), w.space.org, body=body)
        if "text" in body:
            self._resumed_by(w.space, "mem0 update")
        if "text" in body and w.type == "fact":  # the value's own metadata follows the new text
            got = self._read("GET", f"/v0/memories/{memory_id}", w.space.org)["metadata"]
            if {k: v for k, v in got.items() if k not in VALUE_METADATA} != {
                k: v for k, v in (w.metadata or {}).items() if k not in VALUE_METADATA
            }:
                raise Failed(f"{memory_id}: a text update changed its metadata {w.metadata} -> {got}")
            w.metadata = got
        w.text = body.get("text", w.text)
        self.pending.append(memory_id)

    # --- reads --------------------------------------------------------------------------------------
    @rule(space=SPACE, whole_namespace=mostly(False, True), query=TURN, as_of=AS_OF)
    def recall(self, space: Space, whole_namespace: bool, query: str, as_of: str | None) -> None:
        reader = Reader(space.org, space.namespace, None if whole_namespace else space.entity, space.agent)
        self._recall(reader, query, parse_time(as_of), "recall")

    @rule(space=SPACE, query=TURN, as_of=AS_OF, pin=st.none() | NEWEST)
    def assemble_read(self, space: Space, query: str, as_of: str | None, pin: int | None) -> None:
        """An assemble that stores nothing; `pin`: must_include and seed one of the newest memories of
        either org, in any state (shown only when the reader's org and namespace hold it, current)."""
        body: dict[str, Any] = {"entity_id": space.entity, "turn": query, "namespace": space.namespace}
        body.update(ingest={"store_turn": "none", "extract": False}, **{"return": RETURN_ALL})
        if as_of is not None:
            body["as_of"] = as_of
        picked = None if pin is None else self._pick(pin, lambda i, w: True, deleted=True)
        if picked is not None:
            body.update(must_include=[picked[0]], seed_context={"memory_ids": [picked[0]]})
        now = utcnow()
        answer = self._read("POST", ASSEMBLE, space.org, agent=space.agent, body=body)
        shown = assembled_ids(answer)
        pinned = [i for i in shown if picked is not None and i == picked[0]]
        reader, what = Reader(*space), "assemble (ingest off)"
        self._check_shown(answer, reader, parse_time(as_of), now, what, skip=tuple(pinned))
        # an explicit id may come from another entity or agent of the namespace, never from elsewhere
        loose = Reader(space.org, space.namespace, None, None)
        self._check(
            returned_problems(
                pinned,
                loose,
                self.model,
                self.snapshots,
                as_of=parse_time(as_of),
                now=now,
                what=f"{what}, pinned",
            )
        )

    def _check_shown(
        self,
        answer: Any,
        reader: Reader,
        as_of: datetime | None,
        now: datetime,
        what: str,
        skip: tuple[str, ...] = (),
    ) -> None:
        if answer["flags"]["degraded"]:
            raise Failed(f"{what} answered degraded (the hash embedder never fails)")
        shown = [i for i in assembled_ids(answer) if i not in skip]
        self._check(
            returned_problems(shown, reader, self.model, self.snapshots, as_of=as_of, now=now, what=what)
        )

    @rule(
        space=MEM0_SPACE,
        route=st.sampled_from(("/search", "/v3/memories/search/", "/v1/memories")),
        query=TURN,
    )
    def mem0_search(self, space: Space, route: str, query: str) -> None:
        scope = {"user_id": space.entity} | ({"agent_id": space.agent} if space.agent else {})
        now = utcnow()
        if route == "/v1/memories":
            answer = self._read("GET", route, space.org, params={"query": query, **scope, "limit": 100})
        else:
            answer = self._read("POST", route, space.org, body={"query": query, **scope, "top_k": 100})
        found = [m["id"] for m in answer["results"]]
        reader = Reader(space.org, "default", space.entity, space.agent)
        self._check(
            returned_problems(
                found, reader, self.model, self.snapshots, as_of=None, now=now, what=f"{route} search"
            )
        )

    @rule(space=SPACE, whole_org=mostly(False, True))
    def list_current(self, space: Space, whole_org: bool) -> None:
        params: dict[str, Any] = {"status": "active", "archived": "false"}
        if not whole_org:
            params.update(namespace=space.namespace, entity_id=space.entity)
        got = {r.memory_id for r in self._rows(space.org, params, agent=space.agent)}
        want = {
            r.memory_id
            for r in self.snapshots[space.org].values()
            if r.status == "active"
            and not r.archived
            and (whole_org or (r.namespace, r.entity_id) == (space.namespace, space.entity))
            and space.agent in (None, r.agent_id)
        }
        if got != want:
            raise Failed(
                f"list of current memories: extra {sorted(got - want)}, missing {sorted(want - got)}"
            )


def machine_for(store: str) -> type[ReadAfterWrite]:
    """The state machine on fresh servers of `store` (memory, sqlite, postgres) for every example."""
    return type(f"ReadAfterWrite_{store}", (ReadAfterWrite,), {"store": store})
