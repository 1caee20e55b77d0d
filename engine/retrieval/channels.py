"""The retrieval channels over the Store, and the graph seeds of a request.

Each channel with a positive weight costs one store call (`retrieval_ops`); a channel with weight 0 is
skipped. `semantic` = cosine over cached vectors, `bm25` = the store's keyword search, `graph_prior` =
hop distance from the seed entities (turned into a prior 1 / (1 + hops): 1, 1/2, 1/3 for 0, 1, 2 hops).
When the recency weight is positive the newest events of the scope are fetched as candidates too (one
listing call), so "what happened lately" reaches the context even without word overlap.

Graph seeds (kept simple, documented): the entity_boosts, every `ent:<id>` token written in the turn
or goal, and for each capitalized word of the turn or goal (a capital in any script with case) that
is not a common sentence word, `ent:<the word lowercased>` and, when it differs, the id extraction
gives the name (`name_seeds`: accents folded). At most `MAX_SEEDS` seeds.
The request's own entity_id is never a seed: the scope already keeps only that entity's memories, and
every one of them touches it (entity_id), so as a seed it would put every candidate at hop 0 and the
channel would return an arbitrary top_k. For the same reason the walk never passes through it (every
backend's `graph_search` skips the scope's entity): one hop through it would reach every candidate.
Without seeds the graph channel is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from datetime import timedelta

import msgspec
import numpy as np
import numpy.typing as npt

from engine.bounded import BoundedMap
from engine.embed.cache import EmbeddingCache
from engine.embed.passages import passage_hashes, passages
from engine.errors import Unavailable
from engine.extract.rules.text import entity_id
from engine.letters import UPPER
from engine.models import Memory, text_hash
from engine.retrieval.config import ResolvedRetrieval
from engine.storage.base import Hit, ListQuery, Scope, Store, Vector
from engine.storage.scope_filter import in_scope
from engine.timeutil import shift
from loci.wire.tuning import TUNING

MAX_SEEDS = TUNING.max_seeds
RECENT_EVENTS_FETCH = 8
_ENT = re.compile(r"\bent:[\w\-.:]+")
_COMMON_WORDS = (
    "i i'm im a an the this that these those what when where who whom why how which is are was were do "
    "does did can could should would will shall may might must my your our their his her its we you "
    "they he she it me us them yes no not and or but if then so also please thanks thank hi hello hey "
    "ok okay tell show give find remember what's let today tomorrow yesterday monday tuesday wednesday "
    "thursday friday saturday sunday january february march april may june july august september "
    "october november december"
)
_COMMON = frozenset(_COMMON_WORDS.split(" "))
#: a capitalized word, in any script with case, and its possessive
_NAME = re.compile(rf"\b({UPPER}[\w\-]{{1,40}})\b(?:['\u2019]s\b)?")
_WORD = re.compile(r"(?:[^\W_]|')+")
#: the third person's pronouns in the first person (`semantic_query`: a question asked in a speaker's voice)
_FIRST_OF = {
    "she": "I", "he": "I", "her": "my", "his": "my", "him": "me", "hers": "mine", "herself": "myself",
    "himself": "myself",
}  # fmt: skip
_THIRD_PERSON = re.compile(r"\b(?:" + "|".join(_FIRST_OF) + r")\b", re.IGNORECASE)
_SELF = re.compile(r"\b(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)\b")
_ADDRESSED = re.compile(r"\b(?:you|your|yours|yourself|yourselves)\b", re.IGNORECASE)
#: cosine similarities are rounded to this many decimals: float32 sums differ in the last bits from one
#: implementation to another (faiss, numpy, pgvector), which must not order near-equal candidates
SEMANTIC_DECIMALS = 4
#: more semantic hits fetched than kept, so near-equal candidates at the cut are ordered (and cut) here
SEMANTIC_MARGIN = 16
#: how far the channel fetches to see a tie at its cut end (`add_semantic`)
SEMANTIC_TIE_FETCH = 16_384
#: a name that speaks at least this share of the scope's events says who, not what (`SearchBackend.speaker_shares`)
NAME_SHARE = TUNING.speaker_share


def graph_seeds(entity_id: str | None, entity_boosts: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Seeds for the graph channel; `entity_id` (the scope's entity) is excluded, see above."""
    seeds: list[str] = list(entity_boosts)
    for text in texts:
        if not text:
            continue
        seeds.extend(m.rstrip(".:") for m in _ENT.findall(text))
        seeds.extend(seed for word in query_names(text) for seed in name_seeds(word))
    return [s for s in dict.fromkeys(seeds) if s != entity_id][:MAX_SEEDS]


def name_seeds(word: str) -> tuple[str, ...]:
    """The entity ids a name's word may stand for: `ent:<word lowercased>`, and the id extraction gives
    the name (`rules.text.entity_id`: accents folded, "Zoë" -> ent:zoe) when that differs."""
    own, folded = f"ent:{word.lower()}", entity_id(word)
    return (own,) if own == folded else (own, folded)


def query_names(query: str) -> list[str]:
    """The capitalized words of the query that are not common sentence words: the graph's seeds by
    form, and the names the semantic query may leave out."""
    return list(dict.fromkeys(m.group(1) for m in _NAME.finditer(query) if m.group(1).lower() not in _COMMON))


def semantic_query(query: str, names: Collection[str]) -> str:
    """The text the semantic channel embeds: the query without `names` (and their possessive). A name
    the scope's memories are full of (a turn's "<Name>: ", a greeting) draws the query vector to every
    memory that names the person and crowds the topic out; the keyword and graph channels match names
    exactly. A question about one of them is asked in that speaker's voice, as the speaker's turns are
    said: the name is "I" and the third person's pronouns are the first's ("When did Melanie go camping
    with her kids?" -> "When did I go camping with my kids?"); a possessive is left out. A query left
    with no word outside the common ones is embedded as it is."""
    if not names:
        return query
    named = {m.group(1) for m in _NAME.finditer(query)} & set(names)
    voice = next(iter(named)) if len(named) == 1 else None

    def said(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            return m.group(0)
        return "I" if m.group(0) == voice else " "  # the voice's own name (not its possessive) is "I"

    stripped = _NAME.sub(said, query)
    if voice is not None:
        stripped = _THIRD_PERSON.sub(lambda m: _FIRST_OF[m.group(0).lower()], stripped)
    if not any(w.lower() not in _COMMON for w in _WORD.findall(stripped)):
        return query
    return " ".join(stripped.split())


def asks_about_self(query: str) -> bool:
    """Whether the query is asked in the first person ("What did I buy?", "my sister") and addresses no
    "you": the asker's own turns answer it, not the assistant's."""
    return _SELF.search(query) is not None and _ADDRESSED.search(query) is None


def hops_to_prior(hops: float) -> float:
    return 1.0 / (1.0 + max(0.0, hops))


class ChannelHits(msgspec.Struct, kw_only=True):
    semantic: list[Hit] = msgspec.field(default_factory=list)
    bm25: list[Hit] = msgspec.field(default_factory=list)
    graph: list[Hit] = msgspec.field(default_factory=list)  # raw = the prior 1/(1+hops)
    recent: list[Memory] = msgspec.field(default_factory=list)
    #: a long candidate lifted by its closest passage -> that passage (its line shows it)
    passage: dict[str, str] = msgspec.field(default_factory=dict)
    ops: int = 0
    skipped: list[str] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    degraded: bool = False


def keyword_channel(
    out: ChannelHits,
    store: Store,
    scope: Scope,
    cfg: ResolvedRetrieval,
    *,
    query: str,
    speakers: Sequence[str] = (),
) -> None:
    """The bm25 channel into `out` (skipped without weight or query). It runs first: a store that
    counts `speakers` (the names `speaker_shares` is asked of next) in the same statement then answers
    without another."""
    if cfg.weights.bm25 > 0 and query.strip():
        try:
            out.bm25 = store.search.keyword_search(scope, query, cfg.top_k, speakers)
        except Unavailable as exc:
            out.errors.append(f"bm25: {exc.message}")
            out.degraded = True
        out.ops += 1
    else:
        out.skipped.append("bm25")


def graph_and_recent(
    out: ChannelHits, store: Store, scope: Scope, cfg: ResolvedRetrieval, *, seeds: Sequence[str]
) -> None:
    """graph_prior and the recent events into `out`: with bm25, the channels that do not need the query
    vector (so they can run while it is being computed)."""
    w = cfg.weights
    if w.graph_prior > 0 and seeds:
        try:
            hits = store.search.graph_search(scope, list(seeds), cfg.depth, cfg.top_k)
            out.graph = [Hit(h.memory_id, hops_to_prior(h.raw)) for h in hits]
        except Unavailable as exc:
            out.errors.append(f"graph_prior: {exc.message}")
            out.degraded = True
        out.ops += 1
    else:
        out.skipped.append("graph_prior")
    if w.recency_decay > 0:
        out.recent = recent_events(store, scope)
        out.ops += 1


def same_on_every_backend(hits: Sequence[Hit]) -> list[Hit]:
    """Semantic hits with their similarity rounded (`SEMANTIC_DECIMALS`), best first, then the newer
    id (ids grow with time): near-equal similarities keep one order (and one cut) whatever computed
    them."""
    rounded = [Hit(h.memory_id, round(h.raw, SEMANTIC_DECIMALS)) for h in hits]
    rounded.sort(key=lambda h: h.memory_id, reverse=True)
    rounded.sort(key=lambda h: -h.raw)
    return rounded


def add_semantic(
    out: ChannelHits,
    store: Store,
    scope: Scope,
    cfg: ResolvedRetrieval,
    *,
    query_vector: Vector | None,
    model: str | None,
) -> None:
    """The semantic channel into `out` (skipped without a vector or weight)."""
    if cfg.weights.semantic > 0 and query_vector is not None and model is not None:
        try:
            query = np.asarray(query_vector, np.float32)
            k = cfg.top_k + SEMANTIC_MARGIN
            while True:
                hits = same_on_every_backend(store.search.vector_search(scope, model, query, k))
                # a tie at the cut that runs to the last hit fetched may run on: each backend picks its
                # own members of it, so fetch until the tie ends (or the scope does) and cut it here
                if len(hits) < k or len(hits) <= cfg.top_k or hits[cfg.top_k - 1].raw != hits[-1].raw:
                    break
                if k >= SEMANTIC_TIE_FETCH:  # a degenerate embedder's tie over a whole large scope
                    break
                k *= 4
            out.semantic = hits[: cfg.top_k]
        except Unavailable as exc:
            out.errors.append(f"semantic: {exc.message}")
            out.degraded = True
        out.ops += 1
    else:
        out.skipped.insert(0, "semantic")


def recent_events(store: Store, scope: Scope, limit: int = RECENT_EVENTS_FETCH) -> list[Memory]:
    """The newest in-scope events (at or before as_of when set), newest first."""
    query = ListQuery(
        namespace=scope.namespace,
        entity_id=scope.entity_id,
        agent_id=scope.agent_id,
        types=("event",),
        archived=False,
        statuses=None if scope.as_of is not None else ("active",),
        until=None if scope.as_of is None else shift(scope.as_of, timedelta(microseconds=1)),
        sort="timestamp_desc",
        limit=limit * 2,
    )
    try:
        found = store.list_memories(scope.org_id, query)
    except Unavailable:
        return []
    return [m for m in found if in_scope(m, scope)][:limit]


#: a long text's stored passages and their vectors stacked, row by row
Rows = tuple[tuple[str, ...], npt.NDArray[np.float32]]
#: (model, text hash) -> its complete `Rows`: candidates recur request after request, and stacking their
#: vectors costs more than the product; bounded by rows held, as a long document has many
_PASSAGE_ROWS: BoundedMap[tuple[str, str], Rows] = BoundedMap(16 * 1024, weigh=lambda rows: len(rows[0]))


def passage_rows(embeddings: EmbeddingCache, texts: Sequence[str]) -> tuple[dict[str, Rows], int]:
    """Per long text: the passages whose vectors are stored, and those vectors stacked (texts with none
    stored left out); the store calls made (0 or 1)."""
    rows: dict[str, Rows] = {}
    todo = []
    for text in texts:
        held = _PASSAGE_ROWS.get((embeddings.model, text_hash(text)))
        if held is None:
            todo.append(text)
        else:
            rows[text] = held
    if not todo:
        return rows, 0
    found = embeddings.stored([h for t in todo for h in passage_hashes(t)], passages=True)
    for text in todo:
        pairs = [
            (p, v)
            for p, h in zip(passages(text), passage_hashes(text), strict=True)
            if (v := found.get(h)) is not None
        ]
        if pairs:
            rows[text] = (
                tuple(p for p, _ in pairs),
                np.stack([v for _, v in pairs]).astype(np.float32, copy=False),
            )
            if len(pairs) == len(passage_hashes(text)):  # a partial set may still be written
                _PASSAGE_ROWS.put((embeddings.model, text_hash(text)), rows[text])
    return rows, 1


def passage_lift(
    out: ChannelHits,
    union: Sequence[str],
    memories: Mapping[str, Memory],
    embeddings: EmbeddingCache | None,
    query_vector: Vector | None,
    weight: float,
) -> int:
    """A long candidate's similarity moves `weight` of the way to its closest passage's, when that is
    closer (`engine.embed.passages`) and within `TUNING.passage_margin` of the best whole-text match of
    the query; a long candidate that another channel brought gets one this way
    too (its whole text was not among the semantic channel's hits, one of its sentences may match better
    than they do). Records each lifted candidate's passage in `out.passage`. Returns the store calls
    made (0 to 2: the stored vectors of the passages, of the other channels' long candidates)."""
    if weight <= 0 or embeddings is None or query_vector is None:
        return 0
    long = {mid: m.text for mid in union if (m := memories.get(mid)) is not None and passages(m.text)}
    if not long:
        return 0
    rows, calls = passage_rows(embeddings, list(dict.fromkeys(long.values())))
    raw = {h.memory_id: h.raw for h in out.semantic}
    # the whole-text vectors of the candidates the semantic channel did not return
    need = [text_hash(t) for mid, t in long.items() if mid not in raw and t in rows]
    found = embeddings.stored(need) if need else {}
    calls += 1 if need else 0
    query = np.asarray(query_vector, np.float32)
    floor = max(raw.values(), default=0.0) - TUNING.passage_margin
    for mid, text in long.items():
        held = rows.get(text)
        whole = raw.get(mid)
        if whole is None and (vec := found.get(text_hash(text))) is not None:
            whole = float(np.dot(vec, query))
        if held is None or whole is None:
            continue
        shown, stacked = held
        sims = stacked @ query
        best = int(np.argmax(sims))
        if float(sims[best]) > max(whole, floor):
            raw[mid] = whole + weight * (float(sims[best]) - whole)
            out.passage[mid] = shown[best]
    out.semantic = same_on_every_backend([Hit(mid, r) for mid, r in raw.items()])
    return calls
