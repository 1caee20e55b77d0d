"""The retrieval channels against independent references: faiss vs brute-force numpy, BM25 vs
rank_bm25.BM25Okapi with Lucene's idf over exactly the scope's documents, graph BFS vs hand-computed
hop distances."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from engine.models import Memory, text_hash
from engine.storage.base import Scope, Store
from engine.storage.local_index import reference
from engine.storage.local_index import vector as vector_module
from engine.storage.scope_filter import in_scope
from engine.storage.tokenize import tokenize
from tests.engine.storage.conftest import at, mem

NOW = at(10_000)


class LuceneBM25(BM25Okapi):  # type: ignore[misc]
    """rank_bm25's Okapi BM25 with Lucene's idf, ln(1 + (N - df + 0.5) / (df + 0.5)), the keyword channel's."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


WORDS = [f"w{i}" for i in range(60)] + ["the", "apple", "Apple", "café", "naïve"]


def _random_corpus(rng: random.Random, n: int) -> list[Memory]:
    out = []
    for i in range(n):
        words = rng.choices(WORDS, weights=[1 / (j + 1) for j in range(len(WORDS))], k=rng.randint(0, 12))
        status = rng.choice(["active"] * 6 + ["superseded", "disputed"])
        valid_to = at(rng.choice([500, 20_000])) if rng.random() < 0.2 else None
        out.append(
            mem(
                memory_id=f"mem_r{i:06d}",
                text=" ".join(words),
                entity_id=rng.choice([None, "ent:a", "ent:b", "ent:c"]),
                subject=rng.choice([None, "ent:a", "ent:b", "ent:d"]),
                object=rng.choice([None, "ent:c", "ent:e", "plain text"]),
                agent_id=rng.choice([None, "g1", "g2"]),
                archived=rng.random() < 0.1,
                status=status,
                valid_to=valid_to,
                valid_from=at(rng.randint(0, 3000)) if rng.random() < 0.3 else None,
                timestamp=at(rng.randint(0, 3000)),
            )
        )
    return out


SCOPES = [
    Scope(org_id="org_a", now=NOW),
    Scope(org_id="org_a", now=NOW, entity_id="ent:a"),
    Scope(org_id="org_a", now=NOW, agent_id="g1"),
    Scope(org_id="org_a", now=NOW, entity_id="ent:b", agent_id="g2"),
    Scope(org_id="org_a", now=NOW, as_of=at(1500)),
    Scope(org_id="org_a", now=NOW, as_of=at(600), entity_id="ent:c"),
]


@pytest.mark.parametrize("incremental", [False, True])
def test_keyword_matches_rank_bm25(store: Store, incremental: bool) -> None:
    rng = random.Random(7)
    corpus = _random_corpus(rng, 400)
    if incremental:  # index built first, then patched write by write (vs built in bulk from the rows)
        store.put_memories(corpus[:1])
        store.search.keyword_search(SCOPES[0], "w1", 1)
        for i in range(1, len(corpus), 37):
            store.put_memories(corpus[i : i + 37])
        store.delete_memory("org_a", corpus[0].memory_id)
        store.put_memories(corpus[:1])
    else:
        store.put_memories(corpus)
    queries = ["w0 w1", "w3 w3 w17", "apple café", "w40 w2 w59 nothing", "the w5", "W1 NAÏVE"]
    # a long turn (more distinct terms than postgres.keywords.LONG_QUERY), repeats and absent terms
    queries.append("w9 " + " ".join(f"w{i}" for i in range(0, 60, 3)) + " w9 apple nothing w3")
    for scope in SCOPES:
        docs = [m for m in corpus if in_scope(m, scope)]
        assert store.search.scope_size(scope) == len(docs)
        bm25 = LuceneBM25([tokenize(m.text) for m in docs])
        for q in queries:
            expected = {
                m.memory_id: float(s)
                for m, s in zip(docs, bm25.get_scores(tokenize(q)), strict=True)
                if s > 0
            }
            hits = store.search.keyword_search(scope, q, 1000)
            assert {h.memory_id for h in hits} == set(expected), (scope, q)
            for h in hits:
                assert h.raw == pytest.approx(expected[h.memory_id], abs=1e-6)
            assert [h.raw for h in hits] == sorted((h.raw for h in hits), reverse=True)
            top = store.search.keyword_search(scope, q, 5)
            assert [h.memory_id for h in top] == [h.memory_id for h in hits[:5]]
            ref = reference.keyword_hits(docs, q, 5)
            assert [h.memory_id for h in top] == [h.memory_id for h in ref]
            # the same float on every backend (float8 in SQL), added in the query's order
            assert {h.memory_id: h.raw for h in hits} == {
                h.memory_id: h.raw for h in reference.keyword_hits(docs, q, 1000)
            }, (scope, q)


def test_keyword_edge_cases(store: Store) -> None:
    scope = Scope(org_id="org_a", now=NOW)
    store.put_memories([mem(text="alpha beta"), mem(text="gamma"), mem(text=""), mem(text="delta")])
    assert store.search.keyword_search(scope, "", 5) == []
    assert store.search.keyword_search(scope, "the of", 5) == []  # only stopwords
    assert store.search.keyword_search(scope, "unknown", 5) == []
    assert store.search.keyword_search(scope, "alpha", 0) == []
    # hand-computed: N=4, avgdl=(2+1+0+1)/4=1, df(alpha)=1 -> idf=ln(1 + 3.5/1.5); tf=1, dl=2
    idf = np.log(1 + 3.5 / 1.5)
    expected = idf * (1 * 2.5) / (1 + 1.5 * (1 - 0.75 + 0.75 * 2 / 1))
    (hit,) = store.search.keyword_search(scope, "ALPHA", 5)
    assert hit.raw == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("path", ["numpy", "faiss"])
def test_vector_matches_numpy(store: Store, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # eligible sets up to SMALL rows are scored with numpy, larger ones by faiss with an id selector
    monkeypatch.setattr(vector_module, "SMALL", 10**9 if path == "numpy" else 0)
    n = 1500
    rng = random.Random(n)
    nprng = np.random.default_rng(n)
    corpus = _random_corpus(rng, n)
    corpus = [
        m if i % 10 else mem(memory_id=m.memory_id + "x", text=corpus[i - 1].text, timestamp=m.timestamp)
        for i, m in enumerate(corpus)
    ]  # some share a text (and so a vector)
    dim = 24
    vecs = {}
    for m in corpus:
        h = text_hash(m.text)
        if h not in vecs and rng.random() < 0.95:  # a few memories have no cached vector
            v = nprng.standard_normal(dim).astype(np.float32)
            vecs[h] = v / np.linalg.norm(v)
    store.put_memories(corpus)
    store.put_embeddings("m1", vecs)
    for scope in SCOPES:
        docs = [m for m in corpus if in_scope(m, scope) and text_hash(m.text) in vecs]
        q = nprng.standard_normal(dim).astype(np.float32)
        qn = q / np.linalg.norm(q)
        for k in (1, 10, 50):
            hits = store.search.vector_search(scope, "m1", q, k)
            sims = np.array([float(np.dot(vecs[text_hash(m.text)], qn)) for m in docs])
            order = np.argsort(-sims, kind="stable")[:k]
            assert len(hits) == min(k, len(docs))
            got = {h.memory_id: h.raw for h in hits}
            want = {docs[i].memory_id: float(sims[i]) for i in order}
            # equal vectors tie; compare scores position by position, and ids where scores differ
            assert [h.raw for h in hits] == pytest.approx(sorted(want.values(), reverse=True), abs=1e-5)
            by_id = {m.memory_id: float(s) for m, s in zip(docs, sims, strict=True)}
            for mid, raw in got.items():
                assert raw == pytest.approx(by_id[mid], abs=1e-5)
            ranked = np.sort(sims)[::-1]
            if len(docs) <= k or ranked[k - 1] - ranked[k] > 1e-5:  # no tie at the cut: the same ids
                assert set(got) == set(want)
    assert store.search.vector_search(SCOPES[0], "unknown-model", np.ones(dim, dtype=np.float32), 5) == []


def test_graph_depth(store: Store) -> None:
    chain = [
        mem(text="a-b", subject="ent:a", predicate="knows", object="ent:b", timestamp=at(1)),
        mem(text="about b", entity_id="ent:b", subject="ent:b", object="ent:c", timestamp=at(2)),
        mem(text="c-d", subject="ent:c", object="ent:d", timestamp=at(3)),
        mem(text="d-x", entity_id="ent:d", object="x", object_type="entity", timestamp=at(4)),
        mem(text="x", entity_id="x", timestamp=at(5)),
        mem(text="a again", entity_id="ent:a", timestamp=at(6)),
        mem(
            text="c-q, superseded", subject="ent:c", object="ent:q", object_type="string", status="superseded"
        ),
        mem(text="z", subject="ent:z", object="ent:q", timestamp=at(7)),
        mem(text="b-q superseded", subject="ent:b", object="ent:q", status="superseded", timestamp=at(8)),
    ]
    store.put_memories(chain)
    scope = Scope(org_id="org_a", now=NOW)
    ids = [m.memory_id for m in chain]

    def run(depth: int, seeds: list[str] | None = None) -> list[tuple[str, float]]:
        return [(h.memory_id, h.raw) for h in store.search.graph_search(scope, seeds or ["ent:a"], depth, 50)]

    assert run(0) == [(ids[5], 0.0), (ids[0], 0.0)]  # ties: newer first
    assert run(1) == [(ids[5], 0.0), (ids[0], 0.0), (ids[1], 1.0)]
    assert run(2) == [(ids[5], 0.0), (ids[0], 0.0), (ids[1], 1.0), (ids[2], 2.0)]
    assert run(3)[-1] == (ids[3], 3.0)
    assert run(4)[-1] == (ids[4], 4.0)
    assert run(10) == run(4)  # ent:q / ent:z only reachable through a superseded fact
    assert run(1, ["ent:nobody"]) == []
    assert run(0, ["ent:z", "ent:nobody"]) == [(ids[7], 0.0)]
    assert [h.memory_id for h in store.search.graph_search(scope, ["ent:a"], 4, 2)] == [ids[5], ids[0]]
    as_of = Scope(org_id="org_a", now=NOW, as_of=at(100))
    reached = {h.memory_id: h.raw for h in store.search.graph_search(as_of, ["ent:a"], 10, 50)}
    assert reached[ids[8]] == 1.0 and reached[ids[7]] == 2.0  # b-q was valid then: it links ent:q


def test_graph_matches_reference(store: Store) -> None:
    corpus = _random_corpus(random.Random(3), 500)
    store.put_memories(corpus)
    for scope in SCOPES:
        docs = [m for m in corpus if in_scope(m, scope)]
        for seeds, depth in ((["ent:a"], 0), (["ent:d"], 1), (["ent:e", "ent:b"], 2)):
            assert store.search.graph_search(scope, seeds, depth, 40) == reference.graph_hits(
                docs, seeds, depth, 40, skip=scope.entity_id
            )


def test_the_graph_walk_never_goes_through_the_request_s_own_entity(store: Store) -> None:
    """Hank's scope: a fact linking him to Acme and notes about gardening. Seeded with Acme, the walk
    reached Hank at hop 1 and so every note of his scope, each scored as "1 hop from a seed entity"."""
    fact = mem(
        text="Hank works at Acme",
        entity_id="ent:hank",
        subject="ent:hank",
        predicate="works_at",
        object="ent:acme",
        object_type="entity",
        timestamp=at(1),
    )
    notes = [
        mem(text=f"note {i} about gardening tomatoes", entity_id="ent:hank", timestamp=at(2 + i))
        for i in range(3)
    ]
    store.put_memories([fact, *notes])
    own = Scope(org_id="org_a", now=NOW, entity_id="ent:hank")
    for depth in (0, 1, 2):
        assert [(h.memory_id, h.raw) for h in store.search.graph_search(own, ["ent:acme"], depth, 10)] == [
            (fact.memory_id, 0.0)
        ]
        assert store.search.graph_search(own, ["ent:hank"], depth, 10) == []
    whole = Scope(org_id="org_a", now=NOW)  # no entity of its own: Hank is an entity like any other
    assert len(store.search.graph_search(whole, ["ent:acme"], 1, 10)) == 4


def test_keyword_finds_the_first_memories_of_a_scope(store: Store) -> None:
    """A term in every document of a one- or two-memory scope still scores (an idf that can be zero or
    negative would hide a new scope's first memories from the keyword channel)."""
    scope = Scope(org_id="org_a", now=NOW, entity_id="ent:alice")
    store.put_memories([mem(text="Alice lives in Lisbon", entity_id="ent:alice")])
    assert [h.raw > 0 for h in store.search.keyword_search(scope, "Where does Alice live?", 5)] == [True]
    store.put_memories([mem(text="Alice lives near the sea", entity_id="ent:alice")])
    assert len(store.search.keyword_search(scope, "Where does Alice live?", 5)) == 2
    assert len(store.search.keyword_search(scope, "Lisbon", 5)) == 1


def test_one_visible_word_is_one_term_however_it_was_typed(store: Store) -> None:
    """A composed "é" and an "e" with a combining accent, full-width letters, a soft hyphen or joiner
    inside a word, and "ß" against "ss" are one term to the keyword channel (a query found only the
    memories typed in its own form); a zero-width space still breaks a word."""
    scope = Scope(org_id="org_a", now=NOW, entity_id="ent:uni")
    texts = {
        "nfc": "Je bois un caf\u00e9 au lait",
        "nfd": "Je bois un cafe\u0301 au lait",
        "wide": "\uff21\uff23\uff2d\uff25 hired me",
        "soft": "my pass\u00adword manager",
        "street": "I live on Hauptstra\u00dfe",
        "other": "Nous mangeons du pain",
    }
    memories = {k: mem(text=t, entity_id="ent:uni") for k, t in texts.items()}
    store.put_memories(list(memories.values()))
    ids = {m.memory_id: k for k, m in memories.items()}

    def found(query: str) -> set[str]:
        return {ids[h.memory_id] for h in store.search.keyword_search(scope, query, 10)}

    assert found("caf\u00e9") == found("cafe\u0301") == {"nfc", "nfd"}
    assert found("ACME") == found("acme") == {"wide"}
    assert found("password") == {"soft"}
    assert found("HAUPTSTRASSE") == {"street"}
    assert tokenize("pass\u200bword") == ["pass", "word"]
    assert tokenize("Bob's caf\u00e9") == tokenize("BOB'S CAFE\u0301")


def test_a_tie_at_the_semantic_cut_is_cut_alike_on_every_backend(store: Store) -> None:
    """Many memories at the same similarity across the channel's cut (orthogonal to the query: every
    vector of a hashed embedder that shares no feature with it): each backend's search returns its own
    members of the tie, so the channel fetches the whole tie and keeps the newest, as it orders ties."""
    from engine.retrieval.channels import ChannelHits, add_semantic
    from engine.retrieval.config import resolve
    from engine.retrieval.options import RetrievalOptions

    near = [mem(text=f"near {i}", timestamp=at(i)) for i in range(5)]
    far = [mem(text=f"far {i}", timestamp=at(10 + i)) for i in range(80)]
    store.put_memories([*near, *far])
    vecs = {text_hash(m.text): np.array([0.9 - 0.1 * i, 0.1, 0, 0], np.float32) for i, m in enumerate(near)}
    vecs.update({text_hash(m.text): np.array([0, 0, 1, 0], np.float32) for m in far})
    store.put_embeddings("m1", {h: v / np.linalg.norm(v) for h, v in vecs.items()})
    cfg = resolve(RetrievalOptions(top_k=30))
    out = ChannelHits()
    add_semantic(out, store, SCOPES[0], cfg, query_vector=np.array([1, 0, 0, 0], np.float32), model="m1")
    newest_far = sorted((m.memory_id for m in far), reverse=True)[:25]
    assert [h.memory_id for h in out.semantic] == [m.memory_id for m in near] + newest_far


def _keyword_finder(store: Store, texts: dict[str, str]) -> Callable[[str], set[str]]:
    """Store `texts` (name -> text) as memories of one entity; return: a query -> the names of the
    memories the keyword channel finds for it."""
    scope = Scope(org_id="org_a", now=NOW, entity_id="ent:kw")
    memories = {k: mem(text=t, entity_id="ent:kw") for k, t in texts.items()}
    store.put_memories(list(memories.values()))
    ids = {m.memory_id: k for k, m in memories.items()}
    return lambda query: {ids[h.memory_id] for h in store.search.keyword_search(scope, query, 10)}


def test_a_word_keeps_its_combining_marks(store: Store) -> None:
    """A vowel sign or virama is part of its word (Devanagari, Tamil, Thai): "दिल्ली" is one term, so a
    query for it finds the memory that has it and no memory that only shares a consonant with it."""
    found = _keyword_finder(
        store,
        {
            "delhi": "मेरी बहन दिल्ली में रहती है।",
            "dal": "मुझे दाल चावल पसंद है।",
            "film": "कल हमने एक फिल्म देखी।",
            "chennai": "என் அண்ணன் சென்னை நகரில் வசிக்கிறார்.",
            "movie": "நான் நேற்று சினிமா பார்த்தேன்.",
            "thai": "ฉันชอบ ส้มตำ มาก",
        },
    )
    assert tokenize("दिल्ली") == ["दिल्ली"]
    assert tokenize("சென்னை") == ["சென்னை"]
    assert tokenize("ส้มตำ") == ["ส้มต\u0e4d\u0e32"]  # NFKC spells SARA AM as its two parts
    assert found("दिल्ली") == {"delhi"}
    assert found("சென்னை") == {"chennai"}
    assert found("ส้มตำ") == {"thai"}
    assert found("सेब") == set()


def test_cjk_text_is_indexed_as_character_bigrams(store: Store) -> None:
    """Han, kana and Hangul are written without spaces: a run of them is its overlapping bigrams (a
    lone character itself), on both sides, so a word inside a sentence finds the sentence."""
    found = _keyword_finder(
        store,
        {
            "tea": "我妹妹住在上海，她每天早上喝绿茶。",
            "peanut": "我对花生过敏。",
            "piano": "我正在学习弹钢琴。",
            "coffee": "毎朝コーヒーを飲みます。",
            "dentist": "来週、歯医者に行きます。",
            "seoul": "서울에서 살아요",
        },
    )
    assert tokenize("我对花生过敏。") == ["我对", "对花", "花生", "生过", "过敏"]
    assert tokenize("iPhone15を買った 年") == ["iphone15", "を買", "買っ", "った", "年"]
    assert tokenize("ジョン・スミス") == ["ジョ", "ョン", "スミ", "ミス"]  # the middle dot separates
    assert found("绿茶") == {"tea"}
    assert found("花生过敏") == {"peanut"}
    assert found("钢琴") == {"piano"}
    assert found("コーヒー") == {"coffee"}
    assert found("歯医者") == {"dentist"}
    assert found("서울") == {"seoul"}
    assert found("上海的茶") == {"tea"}  # 上海 is a bigram of the memory, 的茶 is not


def test_each_emoji_is_a_term(store: Store) -> None:
    """An emoji or pictograph is a term, with its skin tone and the emoji a zero-width joiner ties it
    to; a flag is its two regional indicators; text or emoji style is the same symbol. So a memory that
    is only emoji is found by its own text. Among words an emoji is no term: the words say it."""
    found = _keyword_finder(
        store,
        {
            "sushi": "🍣",
            "pizza": "🍕",
            "coffee": "\u2615\ufe0f",
            "family": "👨\u200d👩\u200d👧",
            "man": "👨",
            "japan": "🇯🇵",
            "thumb": "👍🏽",
            "text": "I love sushi 🍣 and ramen",
        },
    )
    assert tokenize("👨\u200d👩\u200d👧 🇯🇵🇺🇸 ❤\ufe0f\u200d🔥") == [
        "👨\u200d👩\u200d👧",
        "🇯🇵",
        "🇺🇸",
        "❤\u200d🔥",
    ]
    assert tokenize("a\u200db \u200d") == ["ab"]  # a joiner outside an emoji sequence still joins
    assert tokenize("I love sushi 🍣 and ramen") == ["love", "sushi", "ramen"]
    assert tokenize("I ❤\ufe0f it") == ["❤"]  # no other term: stop words only
    assert found("🍣") == {"sushi"}
    assert found("🍕") == {"pizza"}
    assert found("\u2615") == {"coffee"}
    assert found("👨\u200d👩\u200d👧") == {"family"}
    assert found("👨") == {"man"}
    assert found("🇯🇵") == {"japan"}
    assert found("👍🏽") == {"thumb"}
