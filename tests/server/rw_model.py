"""The plain model of the read-after-write property (tests/server/test_read_after_write.py).

The model is a dict of what was written: for each memory id an outcome named, its memory space (org,
namespace, entity, agent), type, text, tags, metadata, archived flag and whether it was deleted. It
does not re-implement supersession: the facts' statuses and validity intervals are read from the API
(`GET /v0/memories`, a `Snapshot`), and the checks here test what must hold of whatever it answered:
- the listing holds exactly the memories written and not deleted, each as written;
- one value per single-valued key per memory space at every time (`timeline_problems`);
- what a read returns is of the reader's org and scope, neither deleted nor archived, and current (no
  `as_of`) or valid at `as_of` (`returned_problems`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import msgspec

from engine.extract.rules.text import slug
from engine.write.predicates import is_single_valued

ORGS = ("acme", "globex")
NAMESPACES = ("default", "work")
AGENTS: tuple[str | None, ...] = (None, "a1", "a2")
ENTITIES = ("ent:alice", "ent:bob", "ent:carol")
FAR = datetime(9999, 1, 1, tzinfo=UTC)


class Space(NamedTuple):
    """A memory space: supersession happens within one (docs/supersession.md)."""

    org: str
    namespace: str
    entity: str | None
    agent: str | None


class Ref(NamedTuple):
    """A memory a write's outcome named (the rules' bundle)."""

    org: str
    memory_id: str


class Row(msgspec.Struct, kw_only=True):
    """A memory as the API answers it (the fields the checks read)."""

    memory_id: str
    org_id: str
    namespace: str
    agent_id: str | None = None
    entity_id: str | None = None
    type: str
    text: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    tags: list[str] = msgspec.field(default_factory=list)
    timestamp: datetime
    archived: bool = False
    predicate: str | None = None
    object: Any = None
    unit: str | None = None
    keys: list[str] | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    status: str = "active"
    provenance: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def space(self) -> Space:
        return Space(self.org_id, self.namespace, self.entity_id, self.agent_id)

    @property
    def holds_from(self) -> datetime:
        return self.valid_from if self.valid_from is not None else self.timestamp

    @property
    def ends(self) -> datetime:
        return self.valid_to if self.valid_to is not None else FAR

    def current(self, now: datetime) -> bool:
        """What a read without `as_of` (as of now) may return: not archived, begun, not ended, and active,
        disputed (two values of one time: both show) or superseded by a value that begins later."""
        held = self.status in ("active", "disputed") or (
            self.status == "superseded" and self.valid_to is not None
        )
        return held and not self.archived and self.holds_from <= now < self.ends

    def valid_at(self, t: datetime) -> bool:
        """What a read at `as_of` t may return (statuses aside)."""
        return not self.archived and self.holds_from <= t < self.ends

    @property
    def single_key(self) -> str | None:
        """The conflict key when the memory is a fact of a single-valued predicate."""
        if self.type != "fact" or not self.keys or self.predicate is None:
            return None
        return self.keys[0] if is_single_valued(self.predicate) else None


ROWS = msgspec.json.Decoder(list[Row])
ROW = msgspec.json.Decoder(Row)


class Written(msgspec.Struct, kw_only=True):
    """What the model knows of one memory."""

    space: Space
    type: str | None  # None: the write did not say (learnt from the first read, then checked)
    text: str | None
    door: str  # the write that stored it
    archived: bool = False
    tags: list[str] | None = None  # None: not checked
    metadata: dict[str, Any] | None = None
    deleted: bool = False
    #: written with upsert_conflicts=off: stored without touching others, so outside the one-value rule
    exempt: bool = False


class Model:
    def __init__(self) -> None:
        self.memories: dict[str, Written] = {}
        #: facts the API ever showed as disputed (two values of one time, by design)
        self.disputed: set[str] = set()

    def live_ids(self, org: str) -> set[str]:
        return {i for i, w in self.memories.items() if w.space.org == org and not w.deleted}

    def exempt(self) -> set[str]:
        return {i for i, w in self.memories.items() if w.exempt}


Snapshot = dict[str, Row]


# --- one value per key ----------------------------------------------------------------------------
def value_of(row: Row) -> str:
    """A fact's value, normalized the way a reader would call two values the same."""
    obj = row.object
    if isinstance(obj, bool) or obj is None:
        return f"{obj!r}|{' '.join(row.text.casefold().split())}"
    if isinstance(obj, int | float):
        return f"{float(obj)!r} {(row.unit or '').casefold()}"
    if isinstance(obj, str):
        return slug(obj.removeprefix("ent:")) if obj.startswith("ent:") else " ".join(obj.casefold().split())
    return repr(obj)


def _tie(rows: Sequence[Row], disputed: set[str]) -> bool:
    """Values held at once only by a dispute: facts of one time, one of them shown disputed at some
    point (when one side of a tie ends, the other is the value again: active, its history a tie)."""
    return len({r.holds_from for r in rows}) == 1 and any(
        r.memory_id in disputed or r.status == "disputed" for r in rows
    )


def _by_key(rows: Iterable[Row], exempt: set[str]) -> dict[tuple[Space, str], list[Row]]:
    groups: dict[tuple[Space, str], list[Row]] = {}
    for r in rows:
        key = r.single_key
        if key is not None and r.memory_id not in exempt:
            groups.setdefault((r.space, key), []).append(r)
    return groups


def one_value_problems(rows: Iterable[Row], model: Model, what: str) -> list[str]:
    """Rows shown together (current ones, or valid at one time) holding two values of one key."""
    problems = []
    for (space, key), group in _by_key(rows, model.exempt()).items():
        if len({value_of(r) for r in group}) > 1 and not _tie(group, model.disputed):
            shown = ", ".join(f"{r.memory_id} {r.text!r} [{r.status}]" for r in group)
            problems.append(f"{what}: two values of {key} in {space}: {shown}")
    return problems


def timeline_problems(snapshot: Snapshot, model: Model, now: datetime) -> list[str]:
    """One current value per single-valued key per space, and one value valid at every time."""
    rows = [r for r in snapshot.values() if not r.archived]
    problems = one_value_problems([r for r in rows if r.current(now)], model, "current")
    for group in _by_key(rows, model.exempt()).values():
        for t in sorted({r.holds_from for r in group}):
            held = [r for r in group if r.valid_at(t)]
            problems += one_value_problems(held, model, f"valid at {t.isoformat()}")
    return sorted(set(problems))


# --- the listing is what was written ------------------------------------------------------------------
def snapshot_problems(model: Model, org: str, snapshot: Snapshot) -> list[str]:
    """The org's listing holds the memories written there and not deleted, each as written."""
    problems = []
    expected = model.live_ids(org)
    for memory_id in sorted(set(snapshot) - expected):
        w = model.memories.get(memory_id)
        why = "deleted" if w is not None and w.deleted else "never named by a write's outcome"
        why = f"of org {w.space.org}" if w is not None and w.space.org != org else why
        problems.append(f"{org} lists {memory_id} ({why})")
    problems += [
        f"{org} does not list {i} ({model.memories[i].door})" for i in sorted(expected - set(snapshot))
    ]
    for memory_id in sorted(expected & set(snapshot)):
        w, r = model.memories[memory_id], snapshot[memory_id]
        seen = {
            "space": (r.space, w.space),
            "type": (r.type, w.type if w.type is not None else r.type),
            "archived": (r.archived, w.archived),
            "text": (r.text, w.text if w.text is not None else r.text),
            "tags": (r.tags, w.tags if w.tags is not None else r.tags),
            "metadata": (r.metadata, w.metadata if w.metadata is not None else r.metadata),
        }
        problems += [
            f"{memory_id} ({w.door}): {name} is {got!r}, written {want!r}"
            for name, (got, want) in seen.items()
            if got != want
        ]
    return problems


# --- what a read returns --------------------------------------------------------------------------
class Reader(NamedTuple):
    """Who reads: the key's org, the namespace, the entity (None: all) and X-Service-Agent."""

    org: str
    namespace: str
    entity: str | None
    agent: str | None


def returned_problems(
    ids: Iterable[str],
    reader: Reader,
    model: Model,
    snapshots: dict[str, Snapshot],
    *,
    as_of: datetime | None,
    now: datetime,
    what: str,
) -> list[str]:
    """Each id a read returned is the reader's, in its scope, neither deleted nor archived, current
    (no as_of) or valid at as_of; facts shown together hold one value per key."""
    problems = []
    rows = []
    for memory_id in dict.fromkeys(ids):
        row = snapshots[reader.org].get(memory_id)
        if row is None:
            w = model.memories.get(memory_id)
            why = "unknown" if w is None else ("deleted" if w.deleted else f"of {w.space}, not listed")
            problems.append(f"{what} returned {memory_id} ({why})")
            continue
        rows.append(row)
        scope_ok = (
            row.namespace == reader.namespace
            and reader.entity in (None, row.entity_id)
            and reader.agent in (None, row.agent_id)
        )
        shown_ok = row.current(now) if as_of is None else row.valid_at(as_of)
        if not scope_ok or not shown_ok:
            problems.append(
                f"{what} returned {memory_id} {row.text!r} (status {row.status}, archived {row.archived}, "
                f"holds {row.holds_from.isoformat()} to {row.valid_to}, space {row.space})"
            )
    problems += one_value_problems(rows, model, what)
    return problems
