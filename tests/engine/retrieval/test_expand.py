"""Conversation context: speakers as graph hits, the speaker focus, neighbouring turns and same-day boosts."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pytest

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.models import Memory, speaker_of
from engine.retrieval.channels import asks_about_self, graph_seeds, query_names, semantic_query
from engine.retrieval.expand import speaker_hits, speakers, spoken_by_others
from engine.retrieval.options import AssembleRequest
from engine.retrieval.pipeline import run_assemble
from engine.retrieval.responses import ScoreComponent
from engine.storage.base import Hit, ListQuery, Store
from tests.engine.storage.conftest import STORE_FACTORIES, STORE_MARKS

from .helpers import NOW, mem


def _by_id(*memories: Memory) -> dict[str, Memory]:
    return {m.memory_id: m for m in memories}


def test_speaker_of() -> None:
    assert speaker_of("Caroline: I went to a support group.") == "Caroline"
    assert speaker_of("Mary Ann: hi") == "Mary Ann"
    assert speaker_of("caroline: lower case is no name") is None
    assert speaker_of("Note: 12:30 is lunch") == "Note"  # a name by form; it matters only if it is a seed
    assert speaker_of("no colon here") is None
    assert speaker_of("\u00c9mile: j'arrive") == "\u00c9mile"  # a capital beyond A-Z
    assert speaker_of("Zo\u00eb Lee: hi") == "Zo\u00eb Lee"


def test_speaker_hits_are_hop_zero_and_keep_better_graph_hits() -> None:
    memories = _by_id(
        mem("e1", "Caroline: I painted a lake.", type="event"),
        mem("e2", "Melanie: Nice!", type="event"),
        mem("f1", "Caroline: not an event", type="fact"),
    )
    hits = speaker_hits(speakers(["e1", "e2", "f1"], memories, ["ent:caroline"]).named, [Hit("e2", 0.5)])
    assert sorted((h.memory_id, h.raw) for h in hits) == [("e1", 1.0), ("e2", 0.5)]
    assert speaker_hits(speakers(["e1"], memories, []).named, []) == []


@pytest.fixture(
    params=[pytest.param(n, marks=STORE_MARKS.get(n, [])) for n in ("memory", "sqlite", "postgres")]
)
def talk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, EmbeddingCache]]:
    """A conversation on every backend."""
    store = STORE_FACTORIES[request.param](tmp_path)
    day1 = [  # one conversation: the question, the reply holding the answer, small talk
        "Melanie: How was the weekend?",
        "Caroline: I went hiking at Mount Tam with my kids.",
        "Melanie: Lovely!",
        "Caroline: We saw a bobcat near the trail.",
        "Melanie: Wow.",
    ]
    day2 = ["Melanie: I baked bread today.", "Caroline: Yum, send me the recipe."]
    memories = [mem(f"d1_{i}", t, type="event", days_ago=10 - i / 86400) for i, t in enumerate(day1)]
    memories += [mem(f"d2_{i}", t, type="event", days_ago=3 - i / 86400) for i, t in enumerate(day2)]
    store.put_memories(memories)
    cache = EmbeddingCache(HashEmbedder(dim=64), store)
    cache.embed([m.text for m in memories])
    yield store, cache
    store.close()


_ZERO = ScoreComponent(raw=0.0, norm=0.0, weight=0.0, contrib=0.0)


def _ask(
    store: Store, cache: EmbeddingCache, turn: str = "Where did Caroline go hiking?", **retrieval: Any
) -> Any:
    body = {
        "entity_id": "ent:alice",
        "turn": turn,
        "retrieval": retrieval,
        "return": {"max_events": 10, "include_raw_matches": True, "trace": True},
    }
    request = msgspec.convert(body, AssembleRequest)
    return run_assemble(store, cache, org_id="o1", agent_id=None, request=request, request_id="r", now=NOW)


def test_neighbours_join_with_a_share_of_their_anchor_score(talk: tuple[Store, EmbeddingCache]) -> None:
    store, cache = talk
    out = _ask(
        store,
        cache,
        top_k=1,
        weights={"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0},
    )
    matches = {m.memory_id: m for m in out.response.matches or []}
    anchor = matches["d1_1"]  # the only bm25 hit ("hiking")
    for neighbour in ("d1_0", "d1_2", "d1_3"):  # two places each side, same stretch of conversation
        assert neighbour in matches
        got = matches[neighbour].score_components["neighbor_boost"].contrib
        assert got == 0.35 * anchor.score_components["bm25"].contrib
        assert "next to a strong match (same conversation)" in matches[neighbour].reason
    assert "d2_0" not in matches  # another day: not a neighbour
    assert out.response.cost.retrieval_ops >= 3 and out.timings.expand > 0


def test_a_neighbour_takes_a_share_of_what_the_question_matched_in_its_anchor(
    talk: tuple[Store, EmbeddingCache],
) -> None:
    """The anchor's graph, recency and confidence columns pass nothing on: every turn of the named speaker
    has them, so the turns around one that only the speaker's name brought in are not lifted."""
    store, cache = talk
    keyword_and_speaker = {
        "semantic": 0,
        "bm25": 0.5,
        "graph_prior": 0.5,
        "recency_decay": 0,
        "confidence": 0,
    }
    out = _ask(store, cache, top_k=1, weights=keyword_and_speaker, expand={"day_weight": 0})
    matches = {m.memory_id: m for m in out.response.matches or []}
    hiking, bobcat = matches["d1_1"], matches["d1_3"]  # "hiking" and the speaker; the speaker alone
    assert (
        hiking.score_components["graph_prior"].contrib > 0
        and bobcat.score_components["graph_prior"].contrib > 0
    )
    share = 0.35 * hiking.score_components["bm25"].contrib
    for neighbour in ("d1_0", "d1_2"):  # next to the hiking turn ("Lovely!" is next to both)
        assert matches[neighbour].score_components["neighbor_boost"].contrib == pytest.approx(share)
    bobcats_neighbour = matches.get("d1_4")  # "Wow.": next to the bobcat turn only
    assert bobcats_neighbour is None or "neighbor_boost" not in bobcats_neighbour.score_components


def test_only_the_best_anchors_bring_their_neighbours(
    talk: tuple[Store, EmbeddingCache], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, cache = talk
    monkeypatch.setattr("engine.retrieval.config.ANCHORS", 1)  # one anchor at any depth
    bm25 = {"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0}
    out = _ask(store, cache, turn="hiking bread", weights=bm25, expand={"day_weight": 0})
    matches = {m.memory_id: m for m in out.response.matches or []}
    best = max(("d1_1", "d2_0"), key=lambda mid: matches[mid].score_components["bm25"].contrib)
    other = "d2_0" if best == "d1_1" else "d1_1"
    boosted = {mid for mid, m in matches.items() if "neighbor_boost" in m.score_components}
    assert boosted and all(mid[:2] == best[:2] for mid in boosted)  # the other hit's day brought none
    assert other in matches and other[:2] not in {mid[:2] for mid in boosted}


def test_expansion_off_and_day_boost(talk: tuple[Store, EmbeddingCache]) -> None:
    store, cache = talk
    off = _ask(
        store,
        cache,
        top_k=1,
        expand={"neighbors": 0, "day_weight": 0},
        weights={"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0},
    )
    assert [m.memory_id for m in off.response.matches or []] == ["d1_1"]
    bm25 = {"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0}
    day = _ask(
        store, cache, turn="Caroline hiking bobcat", expand={"neighbors": 0, "day_weight": 0.5}, weights=bm25
    )
    matches = {m.memory_id: m for m in day.response.matches or []}
    first = {mid: m.score - m.score_components.get("day_boost", _ZERO).contrib for mid, m in matches.items()}
    # both day-1 hits are lifted by half the day's best score; Caroline's lone day-2 turn is not
    best = max(first["d1_1"], first["d1_3"])
    assert matches["d1_1"].score_components["day_boost"].contrib == pytest.approx(0.5 * best)
    assert matches["d1_3"].score_components["day_boost"].contrib == pytest.approx(0.5 * best)
    assert "day_boost" not in matches["d2_1"].score_components


def test_the_turn_that_opens_a_conversation_gains_the_opening_boost(
    talk: tuple[Store, EmbeddingCache],
) -> None:
    """Read off the anchors' walk: an anchor with no turn within the hour before it opens its stretch, and
    so does the turn a walk back stops at short of `neighbors` places."""
    store, cache = talk
    bm25 = {"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0}

    def opened(turn: str, **expand: Any) -> dict[str, float]:
        out = _ask(store, cache, turn=turn, top_k=1, weights=bm25, expand={"day_weight": 0, **expand})
        return {
            m.memory_id: m.score_components["opening_boost"].contrib
            for m in out.response.matches or []
            if "opening_boost" in m.score_components
        }

    # the only hit is d1_1; its walk back stops after d1_0, the first turn of day 1
    assert opened("Where did Caroline go hiking?") == {"d1_0": 0.1}
    assert opened("How was the weekend?") == {"d1_0": 0.1}  # the hit opens the day's talk itself
    # from d1_3 the walk goes the whole two places back, to d1_1: what lies before that is not read
    assert opened("a bobcat") == {}
    assert opened("How was the weekend?", opening_weight=0.3) == {"d1_0": 0.3}
    assert opened("How was the weekend?", opening_weight=0) == {}
    assert opened("How was the weekend?", neighbors=0) == {}  # no walk, no openers
    # without neighbours joining, the walk still finds an opener among the candidates, and adds none
    assert opened("How was the weekend?", neighbor_weight=0) == {"d1_0": 0.1}
    assert opened("Where did Caroline go hiking?", neighbor_weight=0) == {}
    out = _ask(store, cache, turn="How was the weekend?", top_k=1, weights=bm25)
    first = next(m for m in out.response.matches or [] if m.memory_id == "d1_0")
    assert "opens a stretch of conversation" in first.reason


def test_speaker_named_in_the_question_is_a_graph_hit(talk: tuple[Store, EmbeddingCache]) -> None:
    store, cache = talk
    out = _ask(store, cache, expand={"neighbors": 0, "day_weight": 0})
    graph = {m.memory_id for m in out.response.matches or [] if m.score_components["graph_prior"].raw == 1.0}
    assert graph == {"d1_1", "d1_3", "d2_1"}  # Caroline's turns
    # the store's graph knows no entity here: the graph hits are the speaker's turns
    assert out.response.retrieval_summary.candidate_counts.graph == 3


def test_a_neighbour_spoken_by_the_named_speaker_gets_the_speakers_prior(
    talk: tuple[Store, EmbeddingCache],
) -> None:
    store, cache = talk
    weights = {"semantic": 0, "bm25": 0.5, "graph_prior": 0.5, "recency_decay": 0, "confidence": 0}
    out = _ask(store, cache, turn="Caroline hiking", top_k=1, weights=weights, expand={"day_weight": 0})
    matches = {m.memory_id: m for m in out.response.matches or []}
    assert matches["d1_1"].score_components["bm25"].raw > 0  # the one keyword hit, the anchor
    # its neighbours joined through the conversation context, not through a channel
    assert {"d1_0", "d1_2", "d1_3"} <= set(matches)
    assert matches["d1_3"].score_components["bm25"].raw == 0.0
    # Caroline's neighbour is a speaker hit like Caroline's keyword hit; Melanie's are not
    assert matches["d1_3"].score_components["graph_prior"].raw == 1.0
    assert matches["d1_3"].score_components["graph_prior"].contrib == 0.5
    assert "graph_prior" not in matches["d1_2"].score_components or (
        matches["d1_2"].score_components["graph_prior"].raw == 0.0
    )
    assert matches["d1_3"].score > matches["d1_2"].score


def _others(ids: list[str], memories: dict[str, Memory], seeds: list[str], query: str) -> frozenset[str]:
    return spoken_by_others(speakers(ids, memories, seeds), ids, memories, query)


def test_speakers_split_the_events_by_who_said_them() -> None:
    memories = _by_id(
        mem("e1", "Caroline: I painted a lake.", type="event"),
        mem("e2", "Melanie: Nice!", type="event"),
        mem("e3", "no speaker here", type="event"),
        mem("f1", "Melanie: a fact, not a turn", type="fact"),
    )
    ids = ["e1", "e2", "e3", "f1", "gone"]
    assert speakers(ids, memories, ["ent:caroline"]) == (["e1"], ["e2"])
    assert _others(ids, memories, ["ent:caroline"], "What did Caroline paint?") == {"e2"}
    # the question names no speaker of these turns (or none at all): nobody is the other side
    assert _others(ids, memories, ["ent:alice"], "What did Alice paint?") == frozenset()
    assert _others(ids, memories, [], "What was painted?") == frozenset()
    # both speakers named: both are the question's
    assert _others(ids, memories, ["ent:caroline", "ent:melanie"], "Who painted?") == frozenset()


def test_a_question_about_the_asker_has_the_assistant_on_the_other_side() -> None:
    memories = _by_id(
        mem("u1", "user: I bought a red bike.", type="event"),
        mem("a1", "assistant: A red bike is a fine choice!", type="event"),
        mem("a2", "Assistant: Anything else?", type="event"),
        # any label the extractor reads as the agent's
        mem("a3", "AI: Shall I find a lock for it?", type="event"),
        mem("f1", "assistant: a fact, not a turn", type="fact"),
    )
    ids = list(memories)
    assert _others(ids, memories, [], "What colour is my bike?") == {"a1", "a2", "a3"}
    assert _others(ids, memories, [], "Which bike did I buy?") == {"a1", "a2", "a3"}
    # a question to the assistant ("you") is about what it said, and one in no person about nobody
    assert _others(ids, memories, [], "What did you tell me about my bike?") == frozenset()
    assert _others(ids, memories, [], "Which bike is red?") == frozenset()


def test_asks_about_self() -> None:
    assert asks_about_self("How many engineers do I lead?")
    assert asks_about_self("My sister's birthday: when is it?")
    assert asks_about_self("Remind me of the hotel name")
    assert not asks_about_self("Can you suggest accessories for my camera?")  # addressed to the assistant
    assert not asks_about_self("What did Your Honor decide?")
    assert not asks_about_self("Where does Alice live?")
    assert not asks_about_self("Is it hers?")


_DIRECT = {"neighbors": 0, "day_weight": 0}


def test_the_turns_of_a_speaker_the_question_does_not_name_lose_the_speaker_focus(
    talk: tuple[Store, EmbeddingCache],
) -> None:
    store, cache = talk
    focused = _ask(store, cache, expand=_DIRECT)
    plain = _ask(store, cache, expand=_DIRECT, speaker_focus=0)
    before = {m.memory_id: m for m in plain.response.matches or []}
    melanie = {"d1_0", "d1_2", "d1_4", "d2_0"}
    assert melanie <= set(before)
    for m in focused.response.matches or []:
        focus = m.score_components.get("speaker_focus")
        if m.memory_id in melanie:
            assert focus is not None
            # the share of the score it had, taken last: the components still add up to the score
            assert focus.contrib == -0.2 * before[m.memory_id].score
            assert m.score == before[m.memory_id].score + focus.contrib
            assert "said by the other side of the question" in m.reason
        else:  # Caroline's turns, named in the question, keep their score
            assert focus is None and m.score == before[m.memory_id].score
    assert not any("speaker_focus" in m.score_components for m in plain.response.matches or [])


@pytest.mark.parametrize(
    "turn",
    ["Where did anyone go hiking?", "Did Caroline and Melanie go hiking?", "Did Alice go hiking?"],
)
def test_no_focus_unless_the_question_names_one_side_of_the_conversation(
    talk: tuple[Store, EmbeddingCache], turn: str
) -> None:
    store, cache = talk
    out = _ask(store, cache, turn=turn, expand=_DIRECT)
    assert out.response.matches
    assert not any("speaker_focus" in m.score_components for m in out.response.matches)


class _Cosines:
    """Each stored text at its given cosine to the query, which (however it is worded) is [1, 0]."""

    model, dim = "cosines:2", 2

    def __init__(self, cosines: dict[str, float]) -> None:
        self.cosines = cosines

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        cos = [self.cosines.get(t, 1.0) for t in texts]
        return np.asarray([[c, np.sqrt(1 - c * c)] for c in cos], dtype=np.float32).reshape(len(texts), 2)


def _first(turns: dict[str, tuple[str, float]], question: str, **retrieval: Any) -> str:
    """The best match of `question` (semantic channel only) in a scope of these turns at these cosines."""
    from engine.storage.in_memory import InMemoryStore

    store = InMemoryStore()
    store.put_memories(
        [mem(mid, text, type="event", days_ago=1 + i) for i, (mid, (text, _)) in enumerate(turns.items())]
    )
    cache = EmbeddingCache(_Cosines(dict(turns.values())), store)
    cache.embed([t for t, _ in turns.values()], persist=True)
    semantic = {"semantic": 1, "bm25": 0, "graph_prior": 0, "recency_decay": 0, "confidence": 0}
    out = _ask(store, cache, turn=question, weights=semantic, expand=_DIRECT, **retrieval)
    return str((out.response.matches or [])[0].memory_id)


_NAMED = {
    "c1": ("Caroline: I paint lakes and sunsets.", 0.45),
    "m1": ("Melanie: Your lakes and sunsets paintings are so lovely!", 0.5),
    "m2": ("Melanie: I baked bread.", 0.1),
}
_CHAT = {
    "u1": ("user: I adopted a cat and called her Miso.", 0.45),
    "a1": ("assistant: Miso is a lovely name for your new cat!", 0.5),
    "u2": ("user: The weather is nice.", 0.1),
}


@pytest.mark.parametrize(
    ("turns", "question", "focused", "plain"),
    [
        (_NAMED, "What does Caroline paint?", "c1", "m1"),
        (_CHAT, "What is my cat called?", "u1", "a1"),
        # asked of the assistant: its reply may be the answer, so it keeps its place
        (_CHAT, "What did you say about my cat?", "a1", "a1"),
    ],
)
def test_the_questions_side_passes_the_other_sides_slightly_closer_turn(
    turns: dict[str, tuple[str, float]], question: str, focused: str, plain: str
) -> None:
    """The other side's reply is a little closer to the question than the turn of the person it is about
    (Caroline, named; the asker, in the first person): with the focus that person's turn leads."""
    assert _first(turns, question) == focused
    assert _first(turns, question, speaker_focus=0) == plain


def test_names_and_the_semantic_query() -> None:
    question = "Would Caroline's kids like Mount Tam, Alice?"
    assert query_names(question) == ["Caroline", "Mount", "Tam", "Alice"]  # "Would" is a sentence word
    assert semantic_query(question, {"Caroline", "Alice"}) == "Would kids like Mount Tam, ?"
    assert semantic_query(question, set()) == question
    # nothing but names and common words would be left: the query as it is
    assert semantic_query("Who is Caroline?", {"Caroline"}) == "Who is Caroline?"


def test_a_question_about_one_speaker_is_asked_in_the_speakers_voice() -> None:
    """A speaker's turns are said in the first person; a question about that speaker alone is embedded
    so: the name "I", the third person's pronouns the first's, a possessive left out."""
    speakers = {"Melanie", "Caroline"}
    voiced = semantic_query("When did Melanie go camping with her kids?", speakers)
    assert voiced == "When did I go camping with my kids?"
    assert semantic_query("What did SHE give him after Melanie's race?", speakers) == (
        "What did I give me after race?"
    )
    assert semantic_query("What do Melanie's kids like?", speakers) == "What do kids like?"
    # two speakers named: both left out, the pronouns as they are
    assert semantic_query("Did Melanie tell Caroline about her trip?", speakers) == "Did tell about her trip?"
    # no speaker named (Alice is none of the scope's): the query as it is
    assert semantic_query("Did Alice visit her mom?", speakers) == "Did Alice visit her mom?"
    # nothing but common words would be left: the query as it is
    assert semantic_query("Who is she, Melanie?", speakers) == "Who is she, Melanie?"


def test_names_beyond_ascii_are_names() -> None:
    question = "Where did Zo\u00eb go with \u00c9mile and \u0141ukasz?"
    assert query_names(question) == ["Zo\u00eb", "\u00c9mile", "\u0141ukasz"]
    assert semantic_query(question, {"Zo\u00eb", "\u00c9mile"}) == "Where did go with and \u0141ukasz?"
    # the seeds name the ids extraction gives them (accents folded) as well as the words lowercased
    assert graph_seeds(None, [], [question]) == [
        "ent:zo\u00eb",
        "ent:zoe",
        "ent:\u00e9mile",
        "ent:emile",
        "ent:\u0142ukasz",
        "ent:lukasz",  # extraction's id (`rules.text.slug` folds the stroke off the letter)
    ]
    # an id written out keeps its letters beyond ASCII, as extraction writes them
    assert graph_seeds(None, [], ["what about ent:\u0431\u043e\u0440\u0438\u0441?"]) == [
        "ent:\u0431\u043e\u0440\u0438\u0441"
    ]


@pytest.mark.parametrize(
    "backend", [pytest.param(n, marks=STORE_MARKS.get(n, [])) for n in ("memory", "sqlite", "postgres")]
)
def test_a_speaker_named_beyond_ascii_is_voiced_in_the_semantic_query_and_is_a_speaker_hit(
    backend: str, tmp_path: Path
) -> None:
    """ "\u00c9mile: ..." turns are \u00c9mile's as "Caroline: ..." turns are Caroline's: the question
    "Where did \u00c9mile go hiking?" embeds in \u00c9mile's voice, and \u00c9mile's turns are graph hits."""
    store = STORE_FACTORIES[backend](tmp_path)
    turns = ["Zo\u00eb: How was the weekend?", "\u00c9mile: I went hiking at Mount Tam.", "Zo\u00eb: Lovely!"]
    turns += ["\u00c9mile: We saw a bobcat.", "Zo\u00eb: Wow."]
    memories = [mem(f"t{i}", t, type="event", days_ago=10 - i / 86400) for i, t in enumerate(turns)]
    store.put_memories(memories)
    try:
        embedder = _Recording()
        cache = EmbeddingCache(embedder, store)
        cache.embed(turns)
        embedder.texts.clear()
        weights = {"semantic": 0.5, "bm25": 0, "graph_prior": 0.5, "recency_decay": 0, "confidence": 0}
        out = _ask(
            store, cache, turn="Where did \u00c9mile go hiking?", weights=weights, expand={"neighbors": 0}
        )
        assert embedder.texts[-1] == "Where did I go hiking?"
        graph = {
            m.memory_id for m in out.response.matches or [] if m.score_components["graph_prior"].raw == 1.0
        }
        assert graph == {"t1", "t3"}
    finally:
        store.close()


class _Recording(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.texts: list[str] = []
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        self.texts.extend(texts)
        return super().embed(texts)


def test_the_semantic_channel_embeds_the_query_in_the_named_speakers_voice(
    talk: tuple[Store, EmbeddingCache],
) -> None:
    store, _ = talk
    embedder = _Recording()
    cache = EmbeddingCache(embedder, store)
    cache.embed([m.text for m in store.list_memories("o1", ListQuery(limit=100))])
    embedder.texts.clear()
    # Caroline speaks half of the scope's events (the question is asked in her voice); Bob speaks none,
    # so he stays in the query
    for turn, semantic in (
        ("Where did Caroline go hiking with Bob?", "Where did I go hiking with Bob?"),
        ("Where did Bob go hiking?", "Where did Bob go hiking?"),
    ):
        embedder.texts.clear()
        embedder.calls = 0
        out = _ask(store, cache, turn=turn, weights={"semantic": 1, "bm25": 0, "graph_prior": 0})
        # in process the query embeds once it is known; a database server starts on the query as it
        # is beside the channels, and embeds the query without the speaker once the counts name her
        server = store.search.capabilities.server_side
        assert embedder.texts == ([turn, semantic] if server and semantic != turn else [semantic])
        assert embedder.calls == len(embedder.texts)
        used = HashEmbedder(dim=64).embed([semantic])[0]
        for m in out.response.matches or []:
            memory = store.get_memory("o1", m.memory_id)
            assert memory is not None
            stored = HashEmbedder(dim=64).embed([memory.text])[0]
            assert m.score_components["semantic"].raw == pytest.approx(float(used @ stored), abs=1e-3)


def test_a_long_turn_takes_no_context_boost(talk: tuple[Store, EmbeddingCache]) -> None:
    store, cache = talk
    long_turn = "Melanie: " + "Lovely, tell me more about the view from the top of it. " * 12
    store.put_memories([mem("d1_long", long_turn, type="event", days_ago=10 - 1.5 / 86400)])
    cache.embed([long_turn])
    bm25 = {"semantic": 0, "bm25": 1, "graph_prior": 0, "recency_decay": 0, "confidence": 0}

    def boosts(max_chars: int) -> dict[str, set[str]]:
        out = _ask(store, cache, top_k=1, weights=bm25, expand={"max_chars": max_chars})
        return {
            m.memory_id: {k for k in m.score_components if k.endswith("_boost")}
            for m in out.response.matches or []
        }

    limited = boosts(200)
    assert not limited.get("d1_long")  # longer than 200 characters: not lifted for standing near the answer
    assert "neighbor_boost" in limited["d1_2"]  # the short turn after it still is
    assert "neighbor_boost" in boosts(0)["d1_long"]  # 0: no limit
    store.put_memories([mem("d0_long", long_turn, type="event", days_ago=11)])  # opens a stretch of its own
    cache.embed([long_turn])
    opening = _ask(
        store, cache, turn="the view from the top", top_k=2, weights=bm25, expand={"max_chars": 200}
    )
    assert not any("opening_boost" in m.score_components for m in opening.response.matches or [])
