"""LongMemEval (Wu et al., 2024; MIT): the oracle split (500 questions, each with only its evidence
sessions, a user-assistant chat per session) and the development split of the S setting
(`longmemeval-s-dev`: 131 questions, each with its full haystack of about 50 sessions).

- Every question has its own haystack, so each question is its own conversation
  (`conversation_id` = `question_id`).
- Sessions are dated "2023/05/28 (Sun) 19:47" (no time zone: read as UTC) and put in time order;
  turn ids are `<session_id>:<position>`, speakers are `user` and `assistant`.
- Evidence turns are the turns marked `has_answer`; `evidence_sessions` are `answer_session_ids`.
  A few questions mark no turn at all: their `evidence` is empty (they still count for
  supersession-style answer checks, not for recall).
- `category` is the `question_type`; ids ending in `_abs` are abstention questions
  (`answerable=False`). The 78 `knowledge-update` questions hold an old and a new value in two
  sessions: `answer` is the new one.
- `asked_at` is the `question_date`, except for 44 questions (41 temporal-reasoning, 3
  knowledge-update) whose haystack holds turns dated later that day (or less than a minute
  before): those are asked one minute after their last turn, so a replay with `as_of` =
  `asked_at` sees every session (`raw_question_date` gives the dataset's own date).
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.model import Conversation, Dataset, Question, Session, Turn

DATA_DIR = Path(__file__).resolve().parents[2] / "datasets" / "longmemeval"
DEFAULT_PATH = DATA_DIR / "longmemeval_oracle.json.gz"
#: the development split of the S setting (full haystacks); the rest of S is a test split, never tuned on
S_DEV_PATH = DATA_DIR / "longmemeval_s_dev.json.gz"
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
QUESTION_DELAY = timedelta(minutes=1)


def parse_date(text: str) -> datetime:
    """'2023/05/28 (Sun) 19:47' -> 2023-05-28 19:47 UTC."""
    return datetime.strptime(text.strip(), _DATE_FORMAT).replace(tzinfo=UTC)


def raw_question_date(raw: dict[str, Any]) -> datetime:
    return parse_date(str(raw["question_date"]))


def _read(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data: list[dict[str, Any]] = json.load(fh)
    return data


def _item(raw: dict[str, Any]) -> tuple[Conversation, Question]:
    qid = str(raw["question_id"])
    dated = sorted(
        zip(raw["haystack_dates"], raw["haystack_session_ids"], raw["haystack_sessions"], strict=True),
        key=lambda x: parse_date(x[0]),
    )
    sessions: list[Session] = []
    turns: list[Turn] = []
    evidence: list[str] = []
    for date_text, session_id, items in dated:  # turns come out in time order
        session = Session(session_id=str(session_id), date=parse_date(date_text))
        sessions.append(session)
        for i, item in enumerate(items):
            turn = Turn(
                turn_id=f"{session.session_id}:{i}",
                speaker=str(item["role"]),
                text=str(item["content"]),
                timestamp=session.date + timedelta(seconds=i),
                session=session.session_id,
                index=i,
            )
            turns.append(turn)
            if item.get("has_answer"):
                evidence.append(turn.turn_id)
    conv = Conversation(
        conversation_id=qid,
        speakers=("user", "assistant"),
        sessions=tuple(sessions),
        turns=tuple(turns),
    )
    question = Question(
        question_id=qid,
        conversation_id=qid,
        text=str(raw["question"]),
        answer=str(raw["answer"]),
        evidence=tuple(evidence),
        evidence_sessions=tuple(str(s) for s in raw.get("answer_session_ids") or ()),
        asked_at=max(raw_question_date(raw), turns[-1].timestamp + QUESTION_DELAY),
        category=str(raw["question_type"]),
        answerable=not qid.endswith("_abs"),
    )
    return conv, question


def load_longmemeval(
    path: str | Path | None = None, *, question_types: tuple[str, ...] = (), name: str = "longmemeval-oracle"
) -> Dataset:
    """The oracle split (or another file of the same fields, e.g. `S_DEV_PATH`); `question_types`
    keeps only those types (e.g. `("knowledge-update",)`)."""
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for raw in _read(Path(path) if path else DEFAULT_PATH):
        if question_types and raw["question_type"] not in question_types:
            continue
        conv, question = _item(raw)
        conversations.append(conv)
        questions.append(question)
    return Dataset(
        name=name,
        conversations=tuple(conversations),
        questions=tuple(questions),
        source="https://github.com/xiaowu0162/LongMemEval (longmemeval_oracle.json)",
        license="MIT",
    )
