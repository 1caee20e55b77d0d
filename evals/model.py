"""The one typed form every eval dataset is loaded into.

    Dataset
    ├── conversations: Conversation
    │     ├── sessions: Session (session_id, date)
    │     └── turns: Turn (turn_id, speaker, text, timestamp, session), in time order
    └── questions: Question (evidence turn ids, asked_at, category, gold values)

LoCoMo, LongMemEval and the synthetic generator all produce a `Dataset`; the synthetic generator
writes it as JSON with `msgspec` (the "common format"), so any file in that format replays like
a shipped dataset. Every datetime is timezone-aware UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Annotated, Literal

import msgspec

FactAction = Literal["set", "add", "remove"]
#: a datetime that must carry a time zone (decoding a naive one is an error)
AwareDatetime = Annotated[datetime, msgspec.Meta(tz=True)]


class GoldFact(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn states about its speaker, for synthetic data: `set` replaces a single-valued
    predicate, `add` and `remove` change a multi-valued one."""

    predicate: str
    value: str
    action: FactAction = "set"


class Session(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    date: AwareDatetime


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One utterance. `timestamp` is its session's date plus `index` seconds, so the order of
    turns is total even though the datasets date only sessions."""

    turn_id: str
    speaker: str
    text: str
    timestamp: AwareDatetime
    session: str
    index: int = 0
    caption: str | None = None  # LoCoMo: the caption of a shared image
    facts: tuple[GoldFact, ...] = ()  # synthetic: what the turn states (empty for chatter)
    #: the memory type a replay writes (mixed-type scopes: a fact, note or document is no one's turn)
    kind: str = "event"

    def memory_text(self) -> str:
        """How a replay writes the turn: `<speaker>: <text>` (plus the image caption, if any); a memory
        of another kind than `event`: its text alone."""
        if self.kind != "event":
            return self.text
        text = f"{self.speaker}: {self.text}"
        if self.caption:
            text += f" [shares an image: {self.caption}]"
        return text


class Question(msgspec.Struct, frozen=True, kw_only=True):
    question_id: str
    conversation_id: str
    text: str
    answer: str | None
    #: turn ids that hold the answer, only ids that exist in the conversation
    evidence: tuple[str, ...]
    asked_at: AwareDatetime
    category: str
    #: false for questions with no answer in the conversation (LoCoMo category 5, LongMemEval
    #: `_abs`); they are left out of evidence recall
    answerable: bool = True
    #: evidence ids given by the dataset that point to no turn (dropped from `evidence`)
    dangling_evidence: tuple[str, ...] = ()
    #: session ids that hold the answer (LongMemEval)
    evidence_sessions: tuple[str, ...] = ()
    #: synthetic probes: who and what is asked, the values current at `asked_at` (one for a
    #: single-valued predicate) and the values that were true before but are no longer
    subject: str | None = None
    predicate: str | None = None
    current_values: tuple[str, ...] = ()
    stale_values: tuple[str, ...] = ()


class Conversation(msgspec.Struct, frozen=True, kw_only=True):
    conversation_id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    turns: tuple[Turn, ...]

    def turn_ids(self) -> frozenset[str]:
        return frozenset(t.turn_id for t in self.turns)

    def turn_map(self) -> dict[str, Turn]:
        return {t.turn_id: t for t in self.turns}


class Dataset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    conversations: tuple[Conversation, ...]
    questions: tuple[Question, ...]
    source: str = ""
    license: str = ""

    def conversation(self, conversation_id: str) -> Conversation:
        for conv in self.conversations:
            if conv.conversation_id == conversation_id:
                return conv
        raise KeyError(conversation_id)

    def questions_for(self, conversation_id: str) -> Iterator[Question]:
        return (q for q in self.questions if q.conversation_id == conversation_id)

    def dangling_evidence_count(self) -> int:
        return sum(len(q.dangling_evidence) for q in self.questions)

    def subset(self, conversation_ids: tuple[str, ...] | list[str]) -> Dataset:
        """The same dataset restricted to some conversations (splits are by conversation)."""
        keep = set(conversation_ids)
        return msgspec.structs.replace(
            self,
            conversations=tuple(c for c in self.conversations if c.conversation_id in keep),
            questions=tuple(q for q in self.questions if q.conversation_id in keep),
        )

    def asked_after_last_session(self, delay: timedelta) -> Dataset:
        """Every question asked `delay` after its conversation's last session began (LoCoMo replays
        with turns as events ask one day after the last session)."""
        last = {c.conversation_id: max(s.date for s in c.sessions) for c in self.conversations if c.sessions}
        questions = tuple(
            msgspec.structs.replace(q, asked_at=last[q.conversation_id] + delay)
            if q.conversation_id in last
            else q
            for q in self.questions
        )
        return msgspec.structs.replace(self, questions=questions)

    def limit(self, n_conversations: int) -> Dataset:
        """The first `n_conversations` conversations and their questions."""
        return self.subset([c.conversation_id for c in self.conversations[:n_conversations]])


def encode_dataset(dataset: Dataset) -> bytes:
    """The common JSON format (what the synthetic generator writes and `load_json` reads)."""
    return msgspec.json.format(msgspec.json.encode(dataset), indent=1)


def decode_dataset(data: bytes | str) -> Dataset:
    return msgspec.json.decode(data, type=Dataset)
