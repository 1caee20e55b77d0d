"""A long document's passages cover all of it: a sentence far into it, or in a script whose sentences end
in `。`, is what its line shows when the question asks about it (`engine.embed.passages`)."""

from __future__ import annotations

import re
from datetime import timedelta

import msgspec
import numpy as np
import numpy.typing as npt

from engine.embed.base import Embedder
from engine.embed.cache import EmbeddingCache
from engine.embed.hash import HashEmbedder
from engine.memory_service import MemoryCreate, MemoryService
from engine.retrieval.options import AssembleRequest
from engine.retrieval.pipeline import assemble
from engine.storage import open_store

from .helpers import NOW

TOPICS = [
    "The quarterly budget review covers marketing spend across regions.",
    "Our onboarding checklist includes laptop setup and badge pickup.",
    "The cafeteria menu rotates every two weeks with seasonal dishes.",
    "Parking permits must be renewed at the front desk each January.",
    "Expense reports are reimbursed within ten business days.",
]
NEEDLE = "The server room door code is 4417 and it changes every March."


class CharEmbedder(HashEmbedder):
    """Bag of characters: texts of a script written without spaces share what they share."""

    def _row(self, text: str) -> npt.NDArray[np.float32]:
        return super()._row(" ".join(f"{ord(c):x}" for c in re.findall(r"\w", text)))


def _context(embedder: Embedder, document: str, notes: list[str], question: str) -> str:
    store = open_store("memory")
    cache = EmbeddingCache(embedder, store)
    service = MemoryService(store, embeddings=cache, clock=lambda: NOW - timedelta(days=1))
    drafts = [{"type": "document", "text": document}] + [{"type": "note", "text": n} for n in notes]
    service.create("o1", [msgspec.convert({"entity_id": "ent:d", **d}, MemoryCreate) for d in drafts])
    request = msgspec.convert(
        {"entity_id": "ent:d", "turn": question, "ingest": {"extract": False, "store_turn": "none"}},
        AssembleRequest,
    )
    out = assemble(store, cache, org_id="o1", agent_id=None, request=request, request_id="r", now=NOW)
    return "\n".join(out.context.sources)


def test_the_answer_in_sentence_101_of_a_long_document_reaches_the_context() -> None:
    sentences = [f"Section {i}: {TOPICS[i % len(TOPICS)]}" for i in range(160)]
    sentences.insert(100, NEEDLE)
    document = " ".join(sentences)
    context = _context(
        HashEmbedder(),
        document,
        ["I like tea.", "The car is blue.", "Lunch with Sam on Friday."],
        "What is the server room door code?",
    )
    assert NEEDLE in context, context
    assert "Section 0:" in context  # the line keeps the document's start before the passage


def test_the_answer_in_a_chinese_document_reaches_the_context() -> None:
    parts = ["公司的年会在十二月举行。", "员工餐厅每两周更换一次菜单。", "停车证需要每年一月在前台续办。"]
    sentences = [f"第{i}条：{parts[i % len(parts)]}" for i in range(300)]
    sentences.insert(150, "服务器机房的门禁密码是四四一七。")
    context = _context(
        CharEmbedder(), "".join(sentences), ["我喜欢喝茶。", "车是蓝色的。"], "服务器机房的门禁密码是多少？"
    )
    assert "服务器机房的门禁密码是四四一七。" in context, context
