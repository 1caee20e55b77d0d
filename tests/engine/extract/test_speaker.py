"""Who says a turn: a `<Name>: ` label names its speaker, roles name the user or the agent, and a
sentence opener is no label."""

from __future__ import annotations

import pytest

from engine.extract.speaker import speaker_of


@pytest.mark.parametrize(
    "text, kind, name, body",
    [
        ("Caroline: I moved to Berlin.", "person", "Caroline", "I moved to Berlin."),
        ("Jon Snow: Winter is coming.", "person", "Jon Snow", "Winter is coming."),
        ("user: I live in Paris.", "user", None, "I live in Paris."),
        ("Human: hi", "user", None, "hi"),
        ("assistant: I can help.", "agent", None, "I can help."),
        ("AI: sure", "agent", None, "sure"),
        ("Update: I moved to Rome.", "none", None, "Update: I moved to Rome."),
        ("Good news: I got the job.", "none", None, "Good news: I got the job."),
        ("Note: buy milk", "none", None, "Note: buy milk"),
        ("I moved to Oslo.", "none", None, "I moved to Oslo."),
        ("Paris: the city of light", "none", None, "Paris: the city of light"),  # a place, not a person
        # a titled name is its own speaker: "Mr. Smith" and "Mrs. Smith" are two people
        ("Dr. Smith: I work at Google.", "person", "Dr. Smith", "I work at Google."),
        ("Mrs. Ann Lee: hi", "person", "Mrs. Ann Lee", "hi"),
        ("Reminder: I work at Google.", "none", None, "Reminder: I work at Google."),
        ("Mom: I live in Oslo.", "none", None, "Mom: I live in Oslo."),  # someone, but not by name
        ("10:30 meeting", "none", None, "10:30 meeting"),
    ],
)
def test_speaker_of(text: str, kind: str, name: str | None, body: str) -> None:
    said = speaker_of(text)
    assert (said.kind, said.name, said.body) == (kind, name, body)
