"""LoCoMo (Maharana et al., 2024; CC BY-NC 4.0): 10 long two-person conversations, 1,986 questions.

- Sessions are `session_<n>` lists dated by `session_<n>_date_time` ("1:56 pm on 8 May, 2023",
  no time zone: read as UTC). Some conversations carry dates for sessions that hold no turns;
  those are skipped.
- Turn ids are the dialog ids `D<session>:<turn>`; a turn's timestamp is its session's date plus
  its position in seconds.
- Evidence ids are pulled out of each evidence string with `D\\d+:\\d+` (a few strings hold
  several ids, "D8:6; D9:17"); ids that name no turn are dropped and kept in
  `Question.dangling_evidence`.
- Categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (no answer in
  the conversation: `answerable=False`, left out of recall).
- The dataset gives no question time: questions are asked one minute after the last turn.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evals.model import Conversation, Dataset, Question, Session, Turn

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "datasets" / "locomo" / "locomo10.json"
CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
EVIDENCE_ID = re.compile(r"D\d+:\d+")
_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"
QUESTION_DELAY = timedelta(minutes=1)


def parse_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> 2023-05-08 13:56 UTC."""
    return datetime.strptime(" ".join(text.split()), _DATE_FORMAT).replace(tzinfo=UTC)


def parse_evidence(items: list[str]) -> list[str]:
    """Every `D<n>:<m>` id in the evidence strings, first occurrence first, no repeats."""
    found: list[str] = []
    for item in items:
        for match in EVIDENCE_ID.findall(str(item)):
            if match not in found:
                found.append(match)
    return found


def _conversation(sample: dict[str, Any]) -> Conversation:
    raw = sample["conversation"]
    conv_id = str(sample["sample_id"])
    numbers = sorted(int(m.group(1)) for k in raw if (m := _SESSION_KEY.fullmatch(k)))
    sessions: list[Session] = []
    turns: list[Turn] = []
    for n in numbers:
        items = raw.get(f"session_{n}") or []
        if not items:
            continue
        session = Session(session_id=f"session_{n}", date=parse_date(raw[f"session_{n}_date_time"]))
        sessions.append(session)
        for i, item in enumerate(items):
            turns.append(
                Turn(
                    turn_id=str(item["dia_id"]),
                    speaker=str(item["speaker"]),
                    text=str(item["text"]),
                    timestamp=session.date + timedelta(seconds=i),
                    session=session.session_id,
                    index=i,
                    caption=item.get("blip_caption") or None,
                )
            )
    turns.sort(key=lambda t: t.timestamp)
    sessions.sort(key=lambda s: s.date)
    speakers = (str(raw["speaker_a"]), str(raw["speaker_b"]))
    return Conversation(
        conversation_id=conv_id, speakers=speakers, sessions=tuple(sessions), turns=tuple(turns)
    )


def _questions(sample: dict[str, Any], conv: Conversation) -> list[Question]:
    known = conv.turn_ids()
    asked_at = max(t.timestamp for t in conv.turns) + QUESTION_DELAY
    out: list[Question] = []
    for i, qa in enumerate(sample["qa"]):
        ids = parse_evidence(list(qa.get("evidence") or []))
        category = int(qa["category"])
        answer = qa.get("answer")
        out.append(
            Question(
                question_id=f"{conv.conversation_id}:q{i}",
                conversation_id=conv.conversation_id,
                text=str(qa["question"]),
                answer=None if answer is None else str(answer),
                evidence=tuple(e for e in ids if e in known),
                dangling_evidence=tuple(e for e in ids if e not in known),
                asked_at=asked_at,
                category=CATEGORIES[category],
                answerable=category != 5,
            )
        )
    return out


def load_locomo(path: str | Path | None = None) -> Dataset:
    with open(path or DEFAULT_PATH, encoding="utf-8") as fh:
        samples = json.load(fh)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for sample in samples:
        conv = _conversation(sample)
        conversations.append(conv)
        questions.extend(_questions(sample, conv))
    return Dataset(
        name="locomo",
        conversations=tuple(conversations),
        questions=tuple(questions),
        source="https://github.com/snap-research/locomo (data/locomo10.json)",
        license="CC BY-NC 4.0",
    )
