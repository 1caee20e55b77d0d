"""Supersession: keep one current value per single-valued fact, keep the history, never overwrite.

A fact's conflict key is `<subject>|<predicate>` (in `Memory.keys`); `engine.write.predicates` says whether
the predicate is single-valued. `resolve` is the pure decision (new memory + the memories already
holding its keys -> what to write); `apply` runs it against a Store inside `store.transaction()`,
reading with `find_by_key` inside the same transaction so concurrent writers serialize.

Rules (mode "smart"; t = valid_from, else timestamp; "current" = status active or disputed with no
valid_to). A fact competes only with the facts of its own memory space: the same org, namespace, key,
entity and agent, and the same run and app (`metadata.run_id`, `metadata.app_id`: mem0's sessions and
applications) (`existing_for`), because a reader scoped to any of these sees only that space, and a
write elsewhere must never leave it with no current value.
- Same value as a current fact (case/space-insensitive strings, `ent:` ids by slug, numbers with the
  same unit): SKIPPED, no new row; the existing fact's confidence rises to the max of both (re-put,
  event memory.updated). A replay of a stored historical value (same value, same t) is SKIPPED too.
  On a single-valued key the fact is the one holding at t: said again later, it keeps t in
  `provenance.restated_at` (the newest RESTATED_MAX times); said before it began, with no other value
  between, it begins at t (and the value holding then ends then); where the key's ties, disputes or
  archived values keep it from beginning sooner, the statement is placed at t as any value is.
- Values arrive in any order, and the timeline is the one of their times: a value (or negation) that
  ends a fact before a time that fact was said again ends it only until then; from then the fact's
  value holds again, as a new fact (`provenance.resumes` = the ended fact's id; the outcome's
  `resumed`). A negation is stored as the end it gives, so one that arrives before the value it ends,
  or whose end a value dated before it moves, is not kept.
- Single-valued, different value: the key's facts form a timeline ordered by t, each value holding
  until the next one begins.
  - every current fact with an earlier t is superseded: status "superseded", valid_to = new t;
    outcome SUPERSEDED with `supersedes` = their ids (event memory.superseded for each); so is a
    historical fact whose interval covers t (it now ends at t);
  - a fact of the key with a later t (current or history) wins: the new fact is stored as history
    (status "superseded", valid_to = the earliest later t, unless its own valid_to is sooner; its event
    names that value in `superseded_by`); outcome UPSERTED with `history` true
    (SUPERSEDED when it also ended an earlier fact's interval);
  - a fact of another value that begins at the same t and still holds then (current, or history a
    later value ended, that later value's own too): equal confidence -> both "disputed" (outcome UPSERTED with `disputed`; a
    disputed history fact keeps its valid_to); higher new confidence ends it at t; lower is stored as
    history that never held. A later value ends disputed facts that hold at its t; they stay
    "disputed", as history. A side of a tie said again keeps no time (`_skip`); sides said again
    before the tie, resumed by one write, hold one after the other (`_one_after_another`), and a
    negated side that holds again ends the other side then.
- A statement (a fact without a predicate that holds a key: a turn stored as `store_turn="fact"`,
  keyed by the single-valued facts it said) is no value of the key: it never ties with, outlives or
  is placed after a value; a value that begins while it holds ends it, as does a negation that leaves
  the key no value (naming the value ended, or none).
- Multi-valued: the same value said while a fact of it held (current or history) is that fact
  (`_skip`), said before a fact of it began with no contrary between, that fact begins then
  (`_begun_sooner`); a different value accumulates (UPSERTED). A predicate with a contrary (likes /
  dislikes, eats / avoids: `PredicateSpec.contrary`) ends the contrary's fact of the same value that
  holds at its t (SUPERSEDED, valid_to = new t; said again later, it resumes then): "I hate jazz now"
  ends "likes jazz"; a contrary fact of the same value with a later t makes the new fact history ending
  then.
- Negation ("I no longer work at Acme"): ends the facts with the same value (all facts of the key when
  the negation carries no value; for a predicate whose values name a kind first,
  `PredicateSpec.by_kind`, also those of the kind it names: "no longer have a cat" ends "cat named
  Tom"; when none has its value, those it names by their first words: "not into hiking anymore" ends
  "hiking in the Dales") that hold at the negation's t (begun by then and not ended then: a current fact, or one that a
  value dated later ends): status "superseded", valid_to = negation t. Nothing new is stored, so the
  outcome names no memory of its own (`memory_id` None): SUPERSEDED with `negation` true and
  `supersedes` = the ended facts, or SKIPPED when nothing matched. A disputed value left with nothing
  to dispute it is active again (event reason "undisputed").
- Mode "off": the memory is stored as given, others untouched (UPSERTED).
- A memory without keys is simply stored (UPSERTED).
- A fact taken back from the archive (`reconcile`) meets the key's values again by the same timeline
  rule (an ended one keeps an end of its own; one a value gave it is where the key's next value now
  begins, that value may have left meanwhile), so a key never holds two values at once and its timeline
  is that of the values in it, whatever the order they came and went in; a stance ends its contrary again.
- A fact that leaves its keys (deleted, archived, moved to another space, edited away:
  `settle_keys_left`) gives back what it superseded: those facts hold until the key's next value, or
  again as its current value (`reinstate`; in a multi-valued key only the same value counts), a
  stance gives back the contrary it ended (`reinstate_contrary`), and a value it disputed is active.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from engine.errors import UnknownName
from engine.extract.rules.text import slug
from engine.ids import event_id, memory_id
from engine.models import Event, Memory
from engine.storage.base import EventQuery, Store
from engine.timeutil import rfc3339
from engine.write.predicates import conflict_key, is_single_valued, spec_for

Mode = Literal["smart", "off"]
MODES: tuple[str, ...] = ("smart", "off")
#: how many restatement times a fact keeps (`provenance.restated_at`): the newest
RESTATED_MAX = 64
#: events of a fact read at a time to find what ended it
SUPERSEDED_EVENTS_PAGE = 200
Action = Literal["UPSERTED", "SUPERSEDED", "SKIPPED"]


class Outcome(msgspec.Struct, kw_only=True):
    """Per-item result; `memory_id`, `action`, `supersedes` are the API's upsert outcome."""

    memory_id: str | None
    action: Action
    supersedes: list[str] = msgspec.field(default_factory=list)
    #: ids of existing facts marked disputed together with this one
    disputed: list[str] = msgspec.field(default_factory=list)
    #: the item was a negation (ends facts, stores nothing); /v1 reports it as DELETE
    negation: bool = False
    #: the item was older than the current fact and was stored as history (status superseded)
    history: bool = False
    #: new facts of values the item ended before they were said again: each holds again from then
    resumed: list[str] = msgspec.field(default_factory=list)


class Resolution(msgspec.Struct, kw_only=True):
    outcome: Outcome
    writes: list[Memory] = msgspec.field(default_factory=list)
    events: list[Event] = msgspec.field(default_factory=list)


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise UnknownName("upsert_conflicts mode", mode, MODES, field="upsert_conflicts")
    return mode  # type: ignore[return-value]


# --- value equality ------------------------------------------------------------------------------
def _norm_unit(unit: str | None) -> str:
    return (unit or "").strip().casefold()


#: first-person words as the rule extractor writes them in a fact about the speaker, so a value stored
#: before it did ("camping trips with my fam") equals its third-person form ("... with their fam");
#: likewise a leading article, which the extractor keeps on a title and dropped before
_FIRST_TO_THIRD = {"i": "they", "me": "them", "my": "their", "mine": "theirs", "myself": "themselves"}
_AFTER_I = {"am": "are", "was": "were"}


def _plain(text: str) -> str:
    words = text.casefold().split()
    if len(words) > 1 and words[0] in ("a", "an", "the"):  # "The Matrix" is "Matrix" said again
        words = words[1:]
    out = [_FIRST_TO_THIRD.get(w, w) for w in words]
    for n in range(1, len(words)):
        if words[n - 1] == "i" and words[n] in _AFTER_I:
            out[n] = _AFTER_I[words[n]]
    return " ".join(out)


def same_value(a: Memory, b: Memory) -> bool:
    """Normalized equality of two facts' objects (and units for numbers)."""
    x, y = a.object, b.object
    if isinstance(x, bool) or isinstance(y, bool):
        return x is y
    if isinstance(x, int | float) and isinstance(y, int | float):
        return math.isclose(float(x), float(y), rel_tol=1e-9, abs_tol=1e-12) and _norm_unit(
            a.unit
        ) == _norm_unit(b.unit)
    if isinstance(x, str) and isinstance(y, str):
        if x.startswith("ent:") or y.startswith("ent:"):
            return slug(x.removeprefix("ent:")) == slug(y.removeprefix("ent:"))
        return _plain(x) == _plain(y)
    if x is None and y is None:
        return " ".join(a.text.casefold().split()) == " ".join(b.text.casefold().split())
    return bool(x == y)


def of_kind(value: Memory, kind: Memory) -> bool:
    """Whether `value`'s object is one of the kind `kind`'s object names: its words come first ("cat
    named Tom" is a "cat", "Tesla Model 3" a "Tesla")."""
    x, y = value.object, kind.object
    if not (isinstance(x, str) and isinstance(y, str)) or x.startswith("ent:"):
        return False
    words, head = _plain(x).split(), _plain(y).split()
    return 0 < len(head) < len(words) and words[: len(head)] == head


#: the words that open a qualifier of a thing already named: "hiking | in the Dales"
_QUALIFIERS = frozenset(["in", "at", "on", "with", "for", "from", "of", "near", "around", "by", "during"])


def named_shorter(value: Memory, short: Memory) -> bool:
    """Whether `short`'s object names `value`'s shortly, as people shorten a value they said before: a
    name by its first words (Greenfield for Greenfield Animal Hospital), a thing without its qualifier
    ("hiking" for "hiking in the Dales"; "jazz" names no "jazz fusion", a kind of fusion)."""
    x, y = value.object, short.object
    if not (isinstance(x, str) and isinstance(y, str)) or x.startswith("ent:") != y.startswith("ent:"):
        return False
    if x.startswith("ent:"):
        words, head = slug(x.removeprefix("ent:")).split("-"), slug(y.removeprefix("ent:")).split("-")
        return 0 < len(head) < len(words) and words[: len(head)] == head
    return of_kind(value, short) and _plain(x).split()[len(_plain(y).split())] in _QUALIFIERS


def effective_time(m: Memory) -> datetime:
    return m.holds_from


def _is_current(m: Memory) -> bool:
    return m.status in ("active", "disputed") and m.valid_to is None


# --- the pure decision ---------------------------------------------------------------------------
def _event(kind: str, m: Memory, now: datetime, **data: Any) -> Event:
    return Event(
        event_id=event_id(), org_id=m.org_id, type=kind, at=now, memory_id=m.memory_id, entity_id=m.entity_id,
        data={"namespace": m.namespace, **{k: v for k, v in data.items() if v is not None}},
    )  # fmt: skip


def _created(new: Memory, now: datetime, action: Action, **data: Any) -> Event:
    return _event("memory.created", new, now, action=action, predicate=new.predicate, keys=new.keys,
                  status=new.status, **data)  # fmt: skip


def _end(old: Memory, at: datetime, now: datetime, by: str | None, reason: str) -> tuple[Memory, Event]:
    ended = msgspec.structs.replace(old, status="superseded", valid_to=at, updated_at=now)
    return ended, _event(
        "memory.superseded", ended, now, superseded_by=by, valid_to=rfc3339(at), reason=reason
    )


def _tie_kept(old: Memory, ended: Memory, event: Event) -> tuple[Memory, Event]:
    """`old` ended (`_end`): a tie ended by the next value stays a tie in its history."""
    return (msgspec.structs.replace(ended, status="disputed") if old.status == "disputed" else ended), event


def restated_times(m: Memory) -> list[datetime]:
    """When `m`'s value was stated again after it began (`provenance.restated_at`), sorted; an entry that
    is no ISO date-time is left out."""
    raw = m.provenance.get("restated_at")
    times: set[datetime] = set()
    for value in raw if isinstance(raw, list) else ():
        try:
            t = datetime.fromisoformat(value) if isinstance(value, str) else None
        except ValueError:
            continue
        if t is not None:
            times.add(t if t.tzinfo is not None else t.replace(tzinfo=UTC))
    return sorted(times)


def _with_restated(m: Memory, times: Iterable[datetime]) -> Memory:
    """`m` with `times` as its restatements (the newest RESTATED_MAX)."""
    kept = sorted(set(times))[-RESTATED_MAX:]
    provenance = {k: v for k, v in m.provenance.items() if k != "restated_at"}
    if kept:
        provenance["restated_at"] = [rfc3339(t) for t in kept]
    return msgspec.structs.replace(m, provenance=provenance)


def of_its_value(m: Memory, old: Memory) -> Memory:
    """`m`, an edit of `old`: its restatements dropped when the edit changed the value they said."""
    same = (m.object, m.unit, m.keys) == (old.object, old.unit, old.keys)
    return m if same or "restated_at" not in m.provenance else _with_restated(m, [])


def _skip(new: Memory, same: Memory, now: datetime) -> Resolution:
    """`new` says `same`'s value again: nothing new is stored. `same` keeps the higher confidence and,
    when `new` is dated after it began, the time it was said again, so a value dated between the two
    later ends `same` only until then (`_resumed`)."""
    t_new = effective_time(new)
    times = restated_times(same)
    # a side of a dispute said again leaves the dispute as it is (the rules for ties)
    restated = t_new > effective_time(same) and t_new not in times and same.status != "disputed"
    raised = new.confidence is not None and (same.confidence is None or new.confidence > same.confidence)
    if not (restated or raised):
        return Resolution(outcome=Outcome(memory_id=same.memory_id, action="SKIPPED"))
    kept = msgspec.structs.replace(same, updated_at=now)
    data: dict[str, Any] = {}
    if raised:
        kept = msgspec.structs.replace(kept, confidence=new.confidence)
        data["confidence"] = new.confidence
    if restated:
        kept = _with_restated(kept, [*times, t_new])
        data["restated_at"] = rfc3339(t_new)
    reason = "confirmed" if raised else "restated"
    return Resolution(
        outcome=Outcome(memory_id=same.memory_id, action="SKIPPED"),
        writes=[kept],
        events=[_event("memory.updated", kept, now, reason=reason, **data)],
    )


def _resumed(old: Memory, t: datetime, now: datetime) -> tuple[Memory, Memory | None]:
    """`old`, about to end at `t`, and the fact its value holds in again from the first time it was
    said after `t` (a new memory, until `old`'s own end), if it was: `old` keeps the restatements
    before `t`, the new fact those after the one it starts at."""
    times = restated_times(old)
    # said again at or after its own end, it resumes nothing there (that end's value holds then)
    after = [x for x in times if x > t and (old.valid_to is None or x < old.valid_to)]
    if not after:
        return old, None
    start = after[0]
    again = _with_restated(
        msgspec.structs.replace(
            old,
            memory_id=memory_id(),
            timestamp=start,
            valid_from=start,
            created_at=now,
            updated_at=now,
            status="active" if old.valid_to is None else "superseded",
            provenance={**old.provenance, "resumes": old.memory_id},
        ),
        after[1:],
    )
    return _with_restated(old, [x for x in times if x < t]), again


def _one_after_another(resumed: list[Memory]) -> list[Memory]:
    """Facts one write resumes together (the sides of a tie, each said again later) hold one after the
    other by the times they were said again: each ends where the next begins, and two said again at
    one time tie again."""
    starts = sorted({effective_time(m) for m in resumed})
    out = []
    for m in resumed:
        t = effective_time(m)
        nxt = [x for x in starts if x > t]
        if nxt and (m.valid_to is None or nxt[0] < m.valid_to):
            m = msgspec.structs.replace(m, status="superseded", valid_to=nxt[0])
        if sum(effective_time(o) == t for o in resumed) > 1:
            m = msgspec.structs.replace(m, status="disputed")
        out.append(m)
    return out


def _written_again(
    resumed: Sequence[Memory],
    now: datetime,
    writes: list[Memory],
    events: list[Event],
    values: Sequence[Memory] = (),
) -> list[str]:
    """The `resumed` facts (`_resumed`) added to `writes` with their creation events (naming the value
    that ends each: one `_one_after_another` ended it at, or the one of `values`, the key's others, that
    begins where the fact it resumes ended, so that value leaving gives it back); their ids."""
    for again in resumed:
        enders = [*resumed, *(o for o in values if not _is_statement(o))]
        by = next((o.memory_id for o in enders if again.valid_to == effective_time(o)), None)
        writes.append(again)
        events.append(_created(again, now, "UPSERTED", resumes=again.provenance["resumes"], superseded_by=by))
    return [m.memory_id for m in resumed]


def resolve(
    new: Memory,
    existing: Sequence[Memory],
    *,
    negated: bool = False,
    mode: Mode = "smart",
    now: datetime,
    contrary: Sequence[Memory] = (),
) -> Resolution:
    """Decide what storing `new` does to `existing` (the memories sharing one of its keys) and to
    `contrary` (the facts of its predicate's contrary about its subject)."""
    check_mode(mode)
    others = [m for m in existing if m.memory_id != new.memory_id]
    if mode == "off" or not new.keys:
        if negated:
            return Resolution(outcome=Outcome(memory_id=None, action="SKIPPED", negation=True))
        return Resolution(
            outcome=Outcome(memory_id=new.memory_id, action="UPSERTED"),
            writes=[new],
            events=[_created(new, now, "UPSERTED")],
        )
    t_new = effective_time(new)
    current = [m for m in others if _is_current(m) and not _is_statement(m)]
    if negated:
        return _negate(new, [m for m in others if _holds_at(m, t_new)], t_new, now, others)
    if is_single_valued(new.predicate or "") and (placed := _in_order(new, others, t_new, now)):
        return placed
    single = is_single_valued(new.predicate or "")
    kin = [m for m in others if same_value(m, new) and not _is_statement(m)]
    # a multi-valued value said while a fact of it held (current or ended since) is that fact said again
    same = [m for m in current if same_value(m, new)] if single else [m for m in kin if _holds_at(m, t_new)]
    if single:  # said before its current fact began, which `_in_order` could not move: placed at its time
        same = [m for m in same if effective_time(m) <= t_new]
    if same:
        return _skip(new, same[0], now)
    replay = [m for m in kin if effective_time(m) == t_new]
    if replay:
        return Resolution(outcome=Outcome(memory_id=replay[0].memory_id, action="SKIPPED"))
    if not single:
        later = [m for m in kin if effective_time(m) > t_new]
        return _multi(new, later, [m for m in contrary if m.memory_id != new.memory_id], t_new, now)
    return _single(new, others, t_new, now)


def _in_order(new: Memory, others: list[Memory], t_new: datetime, now: datetime) -> Resolution | None:
    """A value of a single-valued key placed by its time, in whatever order the values arrive: said
    again while it holds, it is that fact (`_skip`); said before that fact is next said, with no value
    between, that fact begins then (`_begun_sooner`); else `_single`. None (the rules of `resolve` after
    it) when the new value brings its own status or end, or the key holds a tie, a dispute, an archived
    value or one that never held. The key's statements are no values: they are placed after."""
    if new.status != "active" or new.valid_to is not None or new.archived:
        return None
    values = [m for m in others if not _is_statement(m)]
    for m in values:
        t = effective_time(m)
        never_held = m.valid_to is not None and m.valid_to <= t
        tie = t == t_new and not same_value(m, new)
        if never_held or tie or m.archived or m.status == "disputed":
            return None
    holding = [m for m in values if _holds_at(m, t_new)]
    if len(holding) > 1:
        return None
    if holding and same_value(holding[0], new):
        return _skip(new, holding[0], now)
    later = sorted((m for m in values if effective_time(m) > t_new), key=effective_time)
    said_between = any(t > t_new for m in holding for t in restated_times(m))
    if later and same_value(later[0], new) and not said_between:
        statements = [m for m in others if _is_statement(m) and not m.archived]
        return _begun_sooner(later[0], holding, t_new, now, statements, values)
    return _single(new, others, t_new, now)


def _begun_sooner(
    fact: Memory,
    holding: list[Memory],
    t_new: datetime,
    now: datetime,
    statements: Sequence[Memory] = (),
    values: Sequence[Memory] = (),
) -> Resolution:
    """`fact`'s value said at `t_new`, before it began, with no other value between: `fact` begins at
    `t_new` (its old start kept as a restatement) and the value holding then ends then, as does a
    statement holding then; one said since, which `fact` ended where it began, ends at the next value."""
    start = effective_time(fact)
    moved = _with_restated(
        msgspec.structs.replace(fact, valid_from=t_new, updated_at=now),
        [*restated_times(fact), start],
    )
    writes = [moved]
    events = [_event("memory.updated", moved, now, reason="said sooner", valid_from=rfc3339(t_new))]
    ended_now = [*holding, *(m for m in statements if _covers(m, t_new))]
    for old in ended_now:
        ended, event = _end(old, t_new, now, fact.memory_id, "superseded")
        writes.append(ended)
        events.append(event)
    rest = [m for m in values if m.memory_id != fact.memory_id]
    for m in statements:
        only_here = set(m.keys or ()) <= set(fact.keys or ())  # another key's values may end it too
        if only_here and t_new <= effective_time(m) < start and m.valid_to == start:
            writes.append(_statement_reopened(m, _first_value_after(rest, effective_time(m)), now))
            events.append(_event("memory.updated", writes[-1], now, reason="reinstated"))
    ids = [m.memory_id for m in ended_now]
    return Resolution(
        outcome=Outcome(memory_id=fact.memory_id, action="SUPERSEDED" if ids else "SKIPPED", supersedes=ids),
        writes=writes,
        events=events,
    )


def _statement_reopened(m: Memory, end: tuple[datetime, str] | None, now: datetime) -> Memory:
    """Statement `m` holding until `end` (the next value of its key), or current without one."""
    if end is None:
        return msgspec.structs.replace(m, status="active", valid_to=None, updated_at=now)
    return msgspec.structs.replace(m, status="superseded", valid_to=end[0], updated_at=now)


def _is_statement(m: Memory) -> bool:
    """A keyed fact without a predicate: what a stored turn said, not a value of its keys."""
    return m.type == "fact" and m.predicate is None


def _never_held(m: Memory) -> bool:
    """`m` ended where it began (a value stored as history that a later one had already replaced)."""
    return m.valid_to is not None and m.valid_to <= effective_time(m)


def _holds_at(m: Memory, t: datetime) -> bool:
    """`m` began by `t` and had not ended then (disputed values hold too)."""
    return effective_time(m) <= t and (m.valid_to is None or m.valid_to > t)


def _multi(
    new: Memory, later: list[Memory], contrary: list[Memory], t_new: datetime, now: datetime
) -> Resolution:
    """A new value of a multi-valued key: it accumulates, and the contrary's statement of the same value
    holding then ends when it begins; the first contrary begun after it ends it (history). `later`: the
    facts of its value begun after it; the first begins sooner instead when no contrary comes between."""
    opposed = [m for m in contrary if same_value(m, new) and not _is_statement(m) and not _never_held(m)]
    after = min(
        ((effective_time(m), m.memory_id) for m in opposed if effective_time(m) > t_new), default=None
    )
    holding = [m for m in opposed if _holds_at(m, t_new)]
    ended: list[Memory] = []
    resumed: list[Memory] = []
    for m in holding:  # a contrary said again after t_new holds again from then, as on a single-valued key
        kept, again = _resumed(m, t_new, now)
        ended.append(kept)
        if again is not None:
            resumed.append(again)
    bounds = [*([after] if after else []), *((effective_time(m), m.memory_id) for m in resumed)]
    first = min(later, key=effective_time, default=None)
    if first is not None and (not bounds or effective_time(first) < min(bounds)[0]):
        return _begun_sooner(first, holding, t_new, now)
    stored, by = new, None
    if bounds:
        at, by = min(bounds)
        stored = msgspec.structs.replace(new, status="superseded", valid_to=at)
    return _placed(
        stored, ended, [], t_new, now, history=bool(bounds), resumed=resumed, ended_by=by, values=opposed
    )


def _negate(
    new: Memory, holding: list[Memory], t_new: datetime, now: datetime, others: Sequence[Memory] = ()
) -> Resolution:
    by_kind = spec_for(new.predicate or "").by_kind
    if new.object is None:
        targets = holding
    else:
        targets = [m for m in holding if same_value(m, new) or (by_kind and of_kind(m, new))]
        # a negation that names no value held ends the ones it names shortly ("not into hiking anymore")
        targets = targets or [m for m in holding if not _is_statement(m) and named_shorter(m, new)]
    if not targets:
        return Resolution(outcome=Outcome(memory_id=None, action="SKIPPED", negation=True))
    if not [m for m in holding if m not in targets and not _is_statement(m)]:
        # a statement holding then said the value ended (the key holds no other), and never outlives it
        targets = [
            *targets,
            *(m for m in holding if _is_statement(m) and m not in targets and _covers(m, t_new)),
        ]
    writes: list[Memory] = []
    events: list[Event] = []
    resumed: list[Memory] = []
    for old in targets:
        kept, again = _resumed(old, t_new, now)
        ended, event = _tie_kept(kept, *_end(kept, t_new, now, None, "negation"))
        writes.append(ended)
        events.append(event)
        if again is not None:
            resumed.append(again)
    again_ids = _written_again(resumed, now, writes, events, others)
    rest = [m for m in holding if m not in targets and not _is_statement(m)]
    changed: dict[str, tuple[Memory, Event]] = {}
    disputed = any(m.status == "disputed" for m in targets)
    if disputed and (settled := _undisputed([m for m in rest if _is_current(m)], now)) is not None:
        changed[settled[0].memory_id] = settled
    if resumed and is_single_valued(new.predicate or ""):
        # the other side of a tie holds until the negated value is said again
        first = min(resumed, key=effective_time)
        for m in rest:
            m = changed[m.memory_id][0] if m.memory_id in changed else m
            if _covers(m, effective_time(first)):
                changed[m.memory_id] = _tie_kept(
                    m, *_end(m, effective_time(first), now, first.memory_id, "superseded")
                )
    writes += [m for m, _ in changed.values()]
    events += [e for _, e in changed.values()]
    ids = [m.memory_id for m in targets]
    return Resolution(
        outcome=Outcome(
            memory_id=None, action="SUPERSEDED", supersedes=ids, negation=True, resumed=again_ids
        ),
        writes=writes,
        events=events,
    )


def _covers(m: Memory, t: datetime) -> bool:
    """`m` began before `t` and still held at `t`."""
    return effective_time(m) < t and (m.valid_to is None or m.valid_to > t)


def _single(new: Memory, others: list[Memory], t_new: datetime, now: datetime) -> Resolution:
    """A new value of a single-valued key placed on the key's timeline (`others`: the other facts of
    its memory space, any status). A statement holding at `t_new` ends then; it is no value."""
    said = [m for m in others if _is_statement(m) and _covers(m, t_new)]
    others = [m for m in others if not _is_statement(m)]
    later = [(effective_time(m), m.memory_id) for m in others if effective_time(m) > t_new]
    # values that begin at t_new and hold after it: current ones, and history that a later value ended
    ties = [
        m for m in others
        if effective_time(m) == t_new and (m.valid_to is None or m.valid_to > t_new) and not same_value(m, new)
    ]  # fmt: skip
    conf_new = new.confidence if new.confidence is not None else 1.0

    def conf(m: Memory) -> float:
        return m.confidence if m.confidence is not None else 1.0

    ended: list[Memory] = []
    resumed: list[Memory] = []
    for m in others:
        if _covers(m, t_new):  # a value said again after t_new holds again from then
            kept, again = _resumed(m, t_new, now)
            ended.append(kept)
            if again is not None:
                resumed.append(again)
                later.append((effective_time(again), again.memory_id))
    resumed = _one_after_another(resumed)
    ended += said
    if any(conf(m) > conf_new for m in ties):  # a stronger value holds from t_new: the new one never held
        stored = msgspec.structs.replace(new, status="superseded", valid_to=t_new)
        return _placed(stored, ended, [], t_new, now, history=True, resumed=resumed, values=others)
    equal_tie = [m for m in ties if conf(m) == conf_new]
    ended += [m for m in ties if conf(m) < conf_new]
    stored, by = new, None
    if later and (new.valid_to is None or min(later)[0] < new.valid_to):  # history: the next value ended it
        (at, by) = min(later)
        stored = msgspec.structs.replace(stored, status="superseded", valid_to=at)
    if equal_tie:
        stored = msgspec.structs.replace(stored, status="disputed")
    return _placed(
        stored, ended, equal_tie, t_new, now, history=bool(later), resumed=resumed, ended_by=by, values=others
    )


def _placed(
    stored: Memory,
    ended: list[Memory],
    disputed_with: list[Memory],
    t_new: datetime,
    now: datetime,
    *,
    history: bool = False,
    resumed: Sequence[Memory] = (),
    ended_by: str | None = None,
    values: Sequence[Memory] = (),
) -> Resolution:
    """The writes and events of a value placed on its key's timeline: `stored` itself, the facts it
    ends at `t_new`, the ties it disputes, and the `resumed` values said again after it (`_resumed`).
    `ended_by`: the later value that ends `stored` (history), named in its event as `superseded_by`;
    `values`: the key's other values (`_written_again`)."""
    writes: list[Memory] = [stored]
    events: list[Event] = []
    for old in ended:
        closed, event = _tie_kept(old, *_end(old, t_new, now, stored.memory_id, "superseded"))
        writes.append(closed)
        events.append(event)
    disputed: list[str] = []
    for old in disputed_with:
        if old.status != "disputed":
            marked = msgspec.structs.replace(old, status="disputed", updated_at=now)
            writes.append(marked)
            events.append(
                _event("memory.updated", marked, now, reason="disputed", disputed_with=stored.memory_id)
            )
        disputed.append(old.memory_id)
    again_ids = _written_again(resumed, now, writes, events, values)
    superseded = [m.memory_id for m in ended]
    action: Action = "SUPERSEDED" if superseded else "UPSERTED"
    events.insert(0, _created(stored, now, action, supersedes=superseded or None, disputed=disputed or None,
                              history=history or None, superseded_by=ended_by))  # fmt: skip
    return Resolution(
        outcome=Outcome(
            memory_id=stored.memory_id,
            action=action,
            supersedes=superseded,
            disputed=disputed,
            history=history,
            resumed=again_ids,
        ),
        writes=writes,
        events=events,
    )


def reconcile(
    memory: Memory,
    existing: Sequence[Memory],
    *,
    now: datetime,
    reason: str = "unarchived",
    contrary: Sequence[Memory] = (),
    end_given: bool = False,
) -> Resolution:
    """A fact that comes back (from the archive, or edited to another value) meets the other values of
    its key again: placed on the key's timeline as if written anew at its own time, so the values that
    held when it began end then. A current fact of the same value is the same statement made twice: the
    earlier of the two ends when the later began (or, on a single-valued key, when a value between them
    began). A fact that had ended by its own end (negated, or given a valid_to) keeps it, or ends sooner
    when a value written meanwhile began before that; an end a value gave it (`end_given`,
    `ended_by_a_value`) is not kept, since that value may have left while this fact was away: the values
    in the key now say where it ends. A
    multi-valued key keeps its other values. Nothing changes for a fact without a key or one that never
    held. A stance ends its `contrary` as a new one does. Its first event says `reason` and is
    `memory.updated` (the fact already exists)."""
    others = [m for m in existing if m.memory_id != memory.memory_id]
    unchanged = Resolution(outcome=Outcome(memory_id=memory.memory_id, action="UPSERTED"))
    t = effective_time(memory)
    given = end_given and memory.valid_to is not None
    if not memory.keys or (memory.valid_to is not None and memory.valid_to <= t and not given):
        return unchanged
    if _is_statement(memory):
        return _statement_again(memory, others, t, now, reason, own_end=None if given else memory.valid_to)
    # written anew at its time: open, until the key's values say otherwise
    anew = msgspec.structs.replace(memory, status="active", valid_to=None) if given else memory
    current = _is_current(anew)
    single = is_single_valued(memory.predicate or "")
    if not current and not single:
        return unchanged
    twins = [m for m in others if _is_current(m) and same_value(m, memory)] if current else []
    newer = [m for m in twins if effective_time(m) > t]
    # a twin stated later makes this fact history; on a single-valued key `_single` places it, so a value
    # held when it began ends then and the next value, the twin or one between, ends it
    twins = [m for m in twins if m not in newer] if single else twins
    if newer and not single:
        ended, event = _end(
            memory, min(effective_time(m) for m in newer), now, newer[0].memory_id, "same value"
        )
        return Resolution(
            outcome=Outcome(memory_id=memory.memory_id, action="UPSERTED", history=True),
            writes=[ended],
            events=[msgspec.structs.replace(event, data={**event.data, "reason": reason})],
        )
    twin_ends = [_tie_kept(m, *_end(m, t, now, memory.memory_id, "same value")) for m in twins]
    rest = [m for m in others if m not in twins]
    if single:
        fresh = anew if anew.valid_to is None else msgspec.structs.replace(anew, valid_to=None)
        placed = _single(fresh, rest, t, now)
        if anew.valid_to is not None:
            kept = _kept_end(placed.writes[0], memory)
            if kept.valid_to != placed.writes[0].valid_to:  # its own end, not a later value's
                first = placed.events[0]
                data = {k: v for k, v in first.data.items() if k != "superseded_by"}
                placed.events[0] = msgspec.structs.replace(first, data=data)
            placed.writes[0] = kept
    else:
        placed = _multi(anew, [], [m for m in contrary if m.memory_id != memory.memory_id], t, now)
    if placed.writes == [memory] and not twin_ends:
        return unchanged
    first = placed.events[0]
    placed.events[0] = msgspec.structs.replace(
        first, type="memory.updated", data={**first.data, "reason": reason}
    )
    placed.writes[1:1] = [w for w, _ in twin_ends]
    placed.events[1:1] = [e for _, e in twin_ends]
    placed.outcome.supersedes[:0] = [m.memory_id for m in twins]
    if twins and placed.outcome.action == "UPSERTED":
        placed.outcome.action = "SUPERSEDED"
    return placed


def _statement_again(
    memory: Memory,
    others: Sequence[Memory],
    t: datetime,
    now: datetime,
    reason: str,
    *,
    own_end: datetime | None,
) -> Resolution:
    """A statement that comes back holds until the first value of its keys begun after it (or its own
    end, when sooner); it ends no value and ties with none."""
    first = _first_value_after(others, t)
    if first is not None and (own_end is None or first[0] < own_end):
        at, by = first
        placed = msgspec.structs.replace(memory, status="superseded", valid_to=at)
    else:
        by = None
        status = memory.status if own_end is not None else "active"
        placed = msgspec.structs.replace(memory, status=status, valid_to=own_end)
    if placed == memory:
        return Resolution(outcome=Outcome(memory_id=memory.memory_id, action="UPSERTED"))
    placed = msgspec.structs.replace(placed, updated_at=now)
    return Resolution(
        outcome=Outcome(memory_id=memory.memory_id, action="UPSERTED", history=by is not None),
        writes=[placed],
        events=[_event("memory.updated", placed, now, reason=reason, superseded_by=by)],
    )


def _kept_end(placed: Memory, memory: Memory) -> Memory:
    """`placed` (an ended fact placed as if open) with its own end back, unless a value began sooner."""
    end = memory.valid_to
    if end is None or (placed.valid_to is not None and placed.valid_to < end):
        return placed
    return msgspec.structs.replace(
        placed, valid_to=end, status="disputed" if placed.status == "disputed" else memory.status
    )


# --- against a store -----------------------------------------------------------------------------
#: metadata keys that name a memory space within an entity and agent (mem0's run and app)
SPACE_METADATA = ("run_id", "app_id")
#: metadata keys that describe a fact's value (engine.write.ingest.draft_to_memory); they follow the value
VALUE_METADATA = ("object_name", "event_date", "negated")


def same_space(a: Memory, b: Memory) -> bool:
    """Whether two memories are in one memory space: the same entity, agent, run and app (org and
    namespace are the look-up's own). Supersession happens only within a space."""
    return (
        a.entity_id == b.entity_id
        and a.agent_id == b.agent_id
        and all(a.metadata.get(k) == b.metadata.get(k) for k in SPACE_METADATA)
    )


def settle_lone_dispute(store: Store, fact: Memory, key: str, now: datetime) -> None:
    """A value of `key` in `fact`'s space disputed with nothing left to dispute it is no tie (reason
    "undisputed"): a current one with no other current value (the other ended, archived, moved or edited
    away) is active again; a past one with no other value of its time left (archived, deleted, moved or
    edited away) is history, as if that value had never been there."""
    rows = [
        m
        for m in store.find_by_key(fact.org_id, fact.namespace, key)
        if not m.archived and same_space(m, fact) and not _is_statement(m)
    ]
    settled = []
    for m in rows:
        t = effective_time(m)
        # a current value is disputed by another current one (a side that ended is history), a past one
        # by a value of its time
        rivals = [
            o for o in rows
            if o.memory_id != m.memory_id and not same_value(o, m)
            and (_is_current(o) if _is_current(m) else effective_time(o) == t and _holds_at(o, t))
        ]  # fmt: skip
        if m.status == "disputed" and not rivals:
            alone = msgspec.structs.replace(
                m, status="active" if m.valid_to is None else "superseded", updated_at=now
            )
            settled.append((alone, _event("memory.updated", alone, now, reason="undisputed")))
    if settled:
        store.put_memories([m for m, _ in settled])
        store.append_events([e for _, e in settled])


def settle_keys_left(store: Store, gone: Memory, now: datetime, keys: Iterable[str] | None = None) -> None:
    """The keys a fact left (deleted, archived, moved to another space, or edited to other keys; all of
    its keys unless `keys` names them) keep the timeline of the values still in them: what it
    superseded holds again (`reinstate`), and a value it disputed is active again."""
    for key in (gone.keys or []) if keys is None else keys:
        reinstate(store, gone, key, now)
        settle_lone_dispute(store, gone, key, now)
    if keys is None:
        reinstate_contrary(store, gone, now)


def reinstate(store: Store, gone: Memory, key: str, now: datetime) -> None:
    """The facts `gone` ended in `key` (an event of theirs names it as `superseded_by`, and they end where
    it began) hold again (reason "reinstated"): until the key's next value (a `memory.superseded` event
    naming it), or as its current value when no other holds it (`memory.updated`); in a multi-valued key,
    only the same value counts. An archived value is no value of the timeline."""
    t = effective_time(gone)
    rows = [
        m
        for m in store.find_by_key(gone.org_id, gone.namespace, key)
        # an edit to another value leaves the fact in the key, as that value
        if (m.memory_id != gone.memory_id or not same_value(m, gone)) and same_space(m, gone)
    ]
    ended = _ended_by(store, rows, gone)
    if not ended:
        return
    held = [m for m in rows if not m.archived]
    if not is_single_valued(ended[0].predicate or "") and not _is_statement(ended[0]):
        held = [m for m in held if same_value(m, ended[0])]  # other values of a list never end it
    elif at_t := [m for m in ended if effective_time(m) == t and not _is_statement(m)]:
        ended = [m for m in ended if m not in at_t]
        _placed_again(store, at_t, [m for m in held if m not in at_t], t, now)
    if ended:
        _give_back(store, ended, held, t, now)


def _placed_again(store: Store, said: list[Memory], held: list[Memory], t: datetime, now: datetime) -> None:
    """Values of `gone`'s own time that it ended (the same value said twice, or a weaker value), given back:
    each placed on the key's timeline as if written anew at `t` (a tie with a value of that time, history
    when a later one begins); one whose value another fact holds at `t` stays as it is."""
    for m in said:
        if any(same_value(o, m) and _holds_at(o, t) for o in held):
            continue
        placed = _single(msgspec.structs.replace(m, status="active", valid_to=None), held, t, now)
        first = placed.events[0]
        placed.events[0] = msgspec.structs.replace(
            first, type="memory.updated", data={**first.data, "reason": "reinstated"}
        )
        store.put_memories(placed.writes)
        store.append_events(placed.events)
        held = [o for o in held if o.memory_id not in {w.memory_id for w in placed.writes}] + placed.writes


def reinstate_contrary(store: Store, gone: Memory, now: datetime) -> None:
    """A stance that leaves (a dislike of jazz deleted, archived, moved away or edited to another value)
    gives back the contrary it ended (the like of jazz), as `reinstate` does in a key: until the next
    statement of either stance on that value, or as current when none holds it."""
    key = contrary_key(gone)
    if key is None:
        return
    t = effective_time(gone)
    stances = [
        m
        for m in store.find_by_key(gone.org_id, gone.namespace, key)
        if same_space(m, gone) and same_value(m, gone)
    ]
    ended = _ended_by(store, stances, gone)
    if not ended:
        return
    again = [
        m
        for m in existing_for(store, gone)
        if m.memory_id != gone.memory_id and same_value(m, gone) and not _is_statement(m)
    ]
    _give_back(store, ended, [*stances, *again], t, now)


def ended_by(store: Store, gone: Memory) -> list[Memory]:
    """The facts `gone` ended where it began, in its keys and its stance's contrary: what would hold
    again if it left (`settle_keys_left`)."""
    contrary = contrary_key(gone)
    found: dict[str, Memory] = {}
    for key in [*(gone.keys or []), *([contrary] if contrary else [])]:
        rows = [
            m
            for m in store.find_by_key(gone.org_id, gone.namespace, key)
            if m.memory_id != gone.memory_id and same_space(m, gone)
        ]
        for m in _ended_by(store, rows, gone):
            found.setdefault(m.memory_id, m)
    return list(found.values())


def _ended_by(store: Store, rows: list[Memory], gone: Memory) -> list[Memory]:
    """The facts of `rows` that `gone` ended: superseded (or a tie kept in its history) where it began, by
    it (`_superseded_by`)."""
    t = effective_time(gone)
    return [
        m for m in rows
        if m.status in ("superseded", "disputed") and m.valid_to == t and _superseded_by(store, m, gone.memory_id)
    ]  # fmt: skip


def _give_back(store: Store, ended: list[Memory], held: list[Memory], t: datetime, now: datetime) -> None:
    """`ended` (ended at `t` by a value that left) hold again: until the first of `held` beginning at or
    after `t`, or as current when none of `held` is current."""
    later = sorted(
        (effective_time(m), m.memory_id) for m in held if effective_time(m) >= t and m not in ended
    )
    if not later and any(_is_current(m) for m in held):
        return
    if later:  # history again, ended by the next value (named, so that value leaving reinstates it too);
        # a value of `gone`'s own time keeps them ended where they were
        at, by = later[0]
        done = [_tie_kept(m, *_end(m, at, now, by, "reinstated")) for m in ended]
        store.put_memories([m for m, _ in done])
        store.append_events([e for _, e in done])
        return
    values = [m for m in ended if not _is_statement(m)]
    status = "active" if all(same_value(m, values[0]) for m in values) else "disputed"
    # a statement is no value: it ties with none
    back = [
        msgspec.structs.replace(
            m, status="active" if _is_statement(m) else status, valid_to=None, updated_at=now
        )
        for m in ended
    ]
    store.put_memories(back)
    store.append_events(
        [_event("memory.updated", m, now, reason="reinstated", status=m.status) for m in back]
    )


def _superseded_by(store: Store, memory: Memory, by: str) -> bool:
    """Whether `by` ended `memory`: the last event that set its end names `by` as `superseded_by`."""
    last = _last_end(store, memory)
    return last is not None and last.data.get("superseded_by") == by


def ended_by_a_value(store: Store, memory: Memory) -> bool:
    """Whether `memory`'s end is where a value of its key began (the last event that set it names that
    value), not one of its own (a negation, a PATCH of its `valid_to`)."""
    last = _last_end(store, memory)
    return memory.valid_to is not None and last is not None and last.data.get("superseded_by") is not None


def _last_end(store: Store, memory: Memory) -> Event | None:
    """The last event that set `memory`'s end (`memory.superseded`, the write that stored or placed it as
    history, a reinstatement, a PATCH of its `valid_to`). Type and entity narrow the read on PostgreSQL,
    whose events have no memory-id column."""
    last: tuple[int, Event] | None = None
    for kind in ("memory.superseded", "memory.created", "memory.updated"):
        after = None
        while True:
            query = EventQuery(
                type=kind,
                entity_id=memory.entity_id,
                memory_id=memory.memory_id,
                limit=SUPERSEDED_EVENTS_PAGE,
                after=after,
            )
            page = store.list_events(memory.org_id, query)
            for seq, e in page:
                if _sets_end(e) and (last is None or seq > last[0]):
                    last = (seq, e)
            if len(page) < SUPERSEDED_EVENTS_PAGE:
                break
            after = page[-1][0]
    return last[1] if last is not None else None


def _sets_end(e: Event) -> bool:
    """Whether the event set (or cleared) the end of the fact it is about."""
    if e.type == "memory.superseded":
        return True
    fields = e.data.get("fields")
    return (
        "superseded_by" in e.data
        or e.data.get("reason") == "reinstated"
        or (isinstance(fields, list) and "valid_to" in fields)
    )


def _undisputed(current: list[Memory], now: datetime) -> tuple[Memory, Event] | None:
    """The one current value of a key left disputed with nothing to dispute it, active again (and its
    event); None when the key holds another current value or none is disputed."""
    if len(current) != 1 or current[0].status != "disputed":
        return None
    alone = msgspec.structs.replace(current[0], status="active", updated_at=now)
    return alone, _event("memory.updated", alone, now, reason="undisputed")


def next_value_start(store: Store, fact: Memory) -> tuple[datetime, str] | None:
    """When the next value of `fact`'s single-valued key(s) in its space begins after `fact` does (and
    its id): where `fact` must end at the latest. None for a multi-valued or keyless fact."""
    if not fact.keys or not is_single_valued(fact.predicate or ""):
        return None
    t = effective_time(fact)
    later = [
        (effective_time(m), m.memory_id)
        for m in existing_for(store, fact)
        if m.memory_id != fact.memory_id and not m.archived and effective_time(m) > t
    ]
    return min(later) if later else None


def statement_end(store: Store, statement: Memory) -> tuple[datetime, str] | None:
    """When the first value of `statement`'s keys in its space that begins after it does begins (and its
    id): a statement stored after that value (a backdated turn) ends there. None for a keyless one."""
    if not statement.keys:
        return None
    others = [m for m in existing_for(store, statement) if m.memory_id != statement.memory_id]
    return _first_value_after(others, effective_time(statement))


def settle_statement(store: Store, statement_id: str, org_id: str, now: datetime) -> None:
    """After a turn's own facts are written: the turn stored as a statement ends where the first value
    not of its own begins after it (its facts may have given back a value said after it)."""
    statement = store.get_memory(org_id, statement_id)
    if statement is None or not _is_statement(statement) or not statement.keys:
        return
    others = [
        m
        for m in existing_for(store, statement)
        if m.memory_id != statement_id and m.provenance.get("source_turn") != statement_id
    ]
    end = _first_value_after(others, effective_time(statement))
    if end is not None and (statement.valid_to is None or end[0] < statement.valid_to):
        ended, event = _end(statement, end[0], now, end[1], "superseded")
        store.put_memories([ended])
        store.append_events([event])


def _first_value_after(others: Iterable[Memory], t: datetime) -> tuple[datetime, str] | None:
    """The first value of `others` (no statement, none archived) begun after `t`, and its id: where a
    statement said at `t` ends."""
    later = [
        (effective_time(m), m.memory_id)
        for m in others
        if not m.archived and not _is_statement(m) and effective_time(m) > t
    ]
    return min(later) if later else None


def existing_for(store: Store, memory: Memory) -> list[Memory]:
    """The memories of `memory`'s space sharing any of its keys (deduplicated, in find_by_key order)."""
    seen: dict[str, Memory] = {}
    for key in memory.keys or []:
        for m in store.find_by_key(memory.org_id, memory.namespace, key):
            if same_space(m, memory):
                seen.setdefault(m.memory_id, m)
    return list(seen.values())


def value_tokens(memory: Memory) -> tuple[str, str] | None:
    """Where a string value is filed in `KeyFacts`' index: two values `same_value` calls equal share an
    entry (their plain forms, or their slugs when either is an `ent:` id); None for any other value."""
    value = memory.object
    if not isinstance(value, str):
        return None
    return f"p:{_plain(value)}", f"s:{slug(value.removeprefix('ent:'))}"


class KeyFacts:
    """The facts of each conflict key a batch of writes meets, read once per transaction (`find_by_key`,
    which on PostgreSQL also locks the key until the transaction ends) and kept up to date with the
    batch's own writes. A new string value of a multi-valued key is compared only with the facts filed
    under its `value_tokens` (all `resolve` reads there), not with every value the key ever held."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._facts: dict[tuple[str, str, str], dict[str, Memory]] = {}
        self._index: dict[tuple[str, str, str], dict[str, set[str]]] = {}

    def _load(self, where: tuple[str, str, str]) -> dict[str, Memory]:
        facts = self._facts.get(where)
        if facts is None:
            facts = self._facts[where] = {}
            self._index[where] = {}
            for m in self.store.find_by_key(*where):
                self._file(where, m)
        return facts

    def _file(self, where: tuple[str, str, str], memory: Memory) -> None:
        index = self._index[where]
        old = self._facts[where].get(memory.memory_id)
        for token in (value_tokens(old) or ()) if old is not None else ():
            index[token].discard(memory.memory_id)
        self._facts[where][memory.memory_id] = memory
        for token in value_tokens(memory) or ():
            index.setdefault(token, set()).add(memory.memory_id)

    def existing(self, memory: Memory, *, negated: bool = False) -> list[Memory]:
        """What `existing_for` returns, narrowed to the facts whose value may equal `memory`'s when
        that is all `resolve` reads (a multi-valued key; not a negation, which may end a kind of values)."""
        tokens = None
        if not is_single_valued(memory.predicate or "") and not negated:
            tokens = value_tokens(memory)
        seen: dict[str, Memory] = {}
        for key in memory.keys or []:
            for m in self._in_space((memory.org_id, memory.namespace, key), memory, tokens):
                seen.setdefault(m.memory_id, m)
        return list(seen.values())

    def contrary(self, memory: Memory) -> list[Memory]:
        """What `contrary_for` returns, its key read once per batch and narrowed to the facts whose
        value may equal `memory`'s (all `_multi` reads)."""
        key = contrary_key(memory)
        if key is None:
            return []
        return self._in_space((memory.org_id, memory.namespace, key), memory, value_tokens(memory))

    def _in_space(
        self, where: tuple[str, str, str], memory: Memory, tokens: tuple[str, str] | None
    ) -> list[Memory]:
        """The facts of one key in `memory`'s space, in `find_by_key`'s order; with `tokens`, only those
        filed under them."""
        facts = self._load(where)
        if tokens is None:
            found = list(facts.values())
        else:
            found = [facts[mid] for mid in set().union(*(self._index[where].get(t, ()) for t in tokens))]
        return [m for m in sorted(found, key=lambda m: (m.timestamp, m.memory_id)) if same_space(m, memory)]

    def wrote(self, memories: Sequence[Memory]) -> None:
        """The batch stored `memories`: keys already read see them."""
        for m in memories:
            for key in m.keys or []:
                where = (m.org_id, m.namespace, key)
                if where in self._facts:
                    self._file(where, m)


def keys_read(memory: Memory) -> list[tuple[str, str]]:
    """The (namespace, key) pairs supersession reads to store `memory`: its keys and its contrary's."""
    keys = [*(memory.keys or []), *filter(None, [contrary_key(memory)])]
    return [(memory.namespace, key) for key in keys]


def lock_keys_of(store: Store, memories: Sequence[Memory]) -> None:
    """Lock every key supersession will read for `memories` before reading any, sorted (one org after
    the other): two writes of the same keys in another order wait instead of deadlocking."""
    by_org: dict[str, set[tuple[str, str]]] = {}
    for m in memories:
        by_org.setdefault(m.org_id, set()).update(keys_read(m))
    for org_id in sorted(by_org):
        store.lock_keys(org_id, sorted(by_org[org_id]))


def lock_for_write(store: Store, org_id: str, memory_ids: Sequence[str]) -> list[Memory]:
    """The memories as they stand, locked for a read-modify-write: their conflict keys and their
    stances' contraries first (what supersession locks first), then their rows (`Store.lock_memories`), so a concurrent supersession,
    patch or delete of them is either done or waits. A memory deleted meanwhile is missing."""
    seen = store.get_memories(org_id, memory_ids)
    keys = {pair for m in seen for pair in keys_read(m)}
    store.lock_keys(org_id, sorted(keys))
    locked = store.lock_memories(org_id, memory_ids)
    moved = {pair for m in locked for pair in keys_read(m)} - keys
    if moved:  # an edit gave it other keys between the two reads: they are locked now, out of order
        store.lock_keys(org_id, sorted(moved))
    return locked


def contrary_for(store: Store, memory: Memory) -> list[Memory]:
    """The facts of `memory`'s space that its predicate's contrary states about its subject (a like's
    dislikes); none for a predicate without one."""
    key = contrary_key(memory)
    if key is None:
        return []
    return [m for m in store.find_by_key(memory.org_id, memory.namespace, key) if same_space(m, memory)]


def contrary_key(memory: Memory) -> str | None:
    """The conflict key of the contrary of `memory`'s predicate about its subject, if it has one."""
    other = spec_for(memory.predicate or "").contrary
    if other is None or memory.subject is None:
        return None
    return conflict_key(memory.subject, other)


def apply(
    store: Store,
    memory: Memory,
    *,
    negated: bool = False,
    mode: Mode = "smart",
    now: datetime,
    known: KeyFacts | None = None,
) -> Outcome:
    """Store `memory` with supersession; one transaction (joins the caller's when nested). `known`: the
    keys a batch has read in the caller's transaction (a batch's facts do not read their keys again)."""
    with store.transaction():
        existing: list[Memory] = []
        contrary: list[Memory] = []
        if mode == "smart":
            existing = (
                known.existing(memory, negated=negated) if known is not None else existing_for(store, memory)
            )
            if memory.keys and not negated:
                contrary = known.contrary(memory) if known is not None else contrary_for(store, memory)
        resolution = resolve(memory, existing, negated=negated, mode=mode, now=now, contrary=contrary)
        if resolution.writes:
            store.put_memories(resolution.writes)
            if known is not None:
                known.wrote(resolution.writes)
        if resolution.events:
            store.append_events(resolution.events)
        return resolution.outcome
