"""Passages of long memory texts: which texts have them, and that a write stores their vectors."""

from __future__ import annotations

from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.embed.passages import MIN_CHARS, all_passages, is_passage_model, passage_model, passages
from engine.models import text_hash
from engine.storage.in_memory import InMemoryStore
from loci.wire.tuning import TUNING

FILLER = "We talked about the weather and the traffic on the way to the office this morning. " * 8
LONG = f"{FILLER}\nI bought a new espresso machine last week! Ok. Is it any good?"


def test_a_long_text_has_its_sentences_as_passages() -> None:
    assert len(LONG) > TUNING.passage_min_chars
    found = passages(LONG)
    assert found[0] == "We talked about the weather and the traffic on the way to the office this morning."
    assert "I bought a new espresso machine last week!" in found
    assert "Is it any good?" not in found and "Ok." not in found  # shorter than MIN_CHARS
    assert all(len(p) >= MIN_CHARS for p in found)
    assert len(found) == len(set(found))  # the repeated filler sentence once


def test_short_texts_and_single_sentences_have_none() -> None:
    assert passages("I bought a new espresso machine last week.") == ()
    assert passages("x" * (TUNING.passage_min_chars + 1)) == ()  # one sentence: the whole text's vector
    at_limit = ("A sentence of some length. " * 40)[: TUNING.passage_min_chars]
    assert passages(at_limit) == ()


def test_every_sentence_is_a_passage_up_to_max_passages() -> None:
    text = " ".join(f"This is sentence number {i} of a very long turn." for i in range(TUNING.max_passages))
    assert passages(text) == tuple(
        f"This is sentence number {i} of a very long turn." for i in range(TUNING.max_passages)
    )


def test_past_max_passages_runs_of_sentences_cover_the_whole_text() -> None:
    """2 x 128 + 1 sentences: runs of three (ceil(257 / 128)), 86 of them, the last of two."""
    sentences = [
        f"This is sentence number {i} of a very long document." for i in range(2 * TUNING.max_passages + 1)
    ]
    text = "\n".join(sentences)
    found = passages(text)
    assert len(found) == 86 <= TUNING.max_passages
    assert found[0] == "\n".join(sentences[0:3])  # as written: a line showing it finds it in the text
    assert found[33] == "\n".join(sentences[99:102])  # the 101st sentence
    assert found[-1] == "\n".join(sentences[255:257])


def test_sentences_end_at_the_stops_of_scripts_written_without_a_space() -> None:
    chinese = "我们下周一在北京的总部开会讨论新项目的预算。服务器机房的门禁密码是四四一七！你知道明天的会议在几点开始吗？好的。"
    assert len(chinese * 4) > TUNING.passage_min_chars
    assert passages(chinese * 4) == (
        "我们下周一在北京的总部开会讨论新项目的预算。",
        "服务器机房的门禁密码是四四一七！",
        "你知道明天的会议在几点开始吗？",
    )  # "好的。" is three characters, six columns: too short; each sentence once
    quoted = (
        "他说：“我们下周一在北京的总部开会吧！？”然后他就离开了会议室。我们一起去公司楼下的餐厅吃了午饭。"
    )
    assert len(quoted * 5) > TUNING.passage_min_chars
    assert passages(quoted * 5) == (
        "他说：“我们下周一在北京的总部开会吧！？”",
        "然后他就离开了会议室。",  # 11 characters, 22 columns
        "我们一起去公司楼下的餐厅吃了午饭。",
    )
    hindi = "दिल्ली भारत की राजधानी है और यहाँ बहुत लोग रहते हैं।सर्वर रूम का दरवाज़ा कोड 4417 है। " * 3
    assert passages(hindi) == (
        "दिल्ली भारत की राजधानी है और यहाँ बहुत लोग रहते हैं।",
        "सर्वर रूम का दरवाज़ा कोड 4417 है।",
    )


def test_all_passages_lists_those_of_the_long_texts_once() -> None:
    assert all_passages(["short", LONG, LONG]) == list(passages(LONG))
    assert passage_model("hash:256") == "hash:256#passages" and is_passage_model(passage_model("m"))
    assert not is_passage_model("hash:256")


def test_a_written_text_stores_its_passages_vectors_and_a_query_does_not() -> None:
    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    parts = [text_hash(p) for p in passages(LONG)]
    cache.embed([LONG], persist=False)
    assert store.get_embeddings(cache.passage_model, parts) == {}
    rows = cache.embed([LONG], persist=True, defer=True)
    assert len(rows) == 1  # one vector per text asked, the passages stored beside
    assert store.get_embeddings(cache.passage_model, parts) == {}  # deferred: stored by the write
    cache.save([LONG])
    assert set(store.get_embeddings(cache.model, [text_hash(LONG)])) == {text_hash(LONG)}
    assert set(store.get_embeddings(cache.passage_model, parts)) == set(parts)
    assert store.get_embeddings(cache.model, parts) == {}  # under their own name, not the model's
    assert set(cache.stored(parts, passages=True)) == set(parts)
