"""Who says a turn: a `<Name>: ` label names its speaker, roles name the user or the agent, and a
sentence opener is no label."""

from __future__ import annotations

import pytest

from engine.extract.speaker import is_agent_turn, parts_of, speaker_of


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
        # a common word before a colon names no one: a label word, or a common noun by its ending
        ("Correction: I live in Lyon", "none", None, "Correction: I live in Lyon"),
        ("Remember: I live in Lyon now", "none", None, "Remember: I live in Lyon now"),
        ("Background: I work at Stripe", "none", None, "Background: I work at Stripe"),
        ("TLDR: I moved", "none", None, "TLDR: I moved"),
        ("PSA: I moved", "none", None, "PSA: I moved"),
        ("Clarification: I moved", "none", None, "Clarification: I moved"),
        ("Announcement: I moved", "none", None, "Announcement: I moved"),
        ("Confession: I moved", "none", None, "Confession: I moved"),
        ("Translate: I live in Berlin", "none", None, "Translate: I live in Berlin"),
        ("From: Anna Smith", "none", None, "From: Anna Smith"),
        ("Melanie: I live in Paris", "person", "Melanie", "I live in Paris"),
        ("Clement: I live in Paris", "person", "Clement", "I live in Paris"),  # a name with a noun's ending
        # a name's capital in any script with case
        ("\u00c9mile: I live in Lyon", "person", "\u00c9mile", "I live in Lyon"),
        ("Zo\u00eb Salda\u00f1a: hi", "person", "Zo\u00eb Salda\u00f1a", "hi"),
        ("\u0141ukasz: I work at Acme.", "person", "\u0141ukasz", "I work at Acme."),
        ("Dr. \u00d6zt\u00fcrk: hi", "person", "Dr. \u00d6zt\u00fcrk", "hi"),
    ],
)
def test_speaker_of(text: str, kind: str, name: str | None, body: str) -> None:
    said = speaker_of(text)
    assert (said.kind, said.name, said.body) == (kind, name, body)


@pytest.mark.parametrize(
    "text, parts",
    [
        ("Ann: I live in Rome\nBob: I live in Oslo", [("person", "Ann", "I live in Rome"), ("person", "Bob", "I live in Oslo")]),
        # a line without a label goes on with the part before; one speaker's lines are one part
        ("Ann: I moved.\nI live in Rome now.\nAnn: I love it", [("person", "Ann", "I moved.\nI live in Rome now.\nI love it")]),
        ("I live in Rome\nassistant: noted\nuser: and I work at Acme",
         [("none", None, "I live in Rome"), ("agent", None, "noted"), ("user", None, "and I work at Acme")]),
        ("Ann: hi\nNote: I live in Rome\nParis: the city of light", [("person", "Ann", "hi\nNote: I live in Rome\nParis: the city of light")]),
        ("Ann: hi\nCorrection: I live in Rome", [("person", "Ann", "hi\nCorrection: I live in Rome")]),
        ("", [("none", None, "")]),
    ],
)  # fmt: skip
def test_parts_of_a_turn_of_several_speakers(text: str, parts: list[tuple[str, str | None, str]]) -> None:
    assert [(p.kind, p.name, p.body) for p in parts_of(text)] == parts


@pytest.mark.parametrize(
    "text",
    [
        "assistant: Sure.",
        "Assistant: Sure.",
        "AI: Shall I?",
        "system:\nbe brief",
        "user: hi",
        "Caroline: I painted a lake.",
        "Note: 12:30 is lunch",
        "no label at all",
        "assistant:no space",
    ],
)
def test_is_agent_turn_is_speaker_of_an_agent(text: str) -> None:
    assert is_agent_turn(text) == (speaker_of(text).kind == "agent")


def test_a_label_typed_with_combining_accents_names_its_speaker() -> None:
    """ "E" + U+0301 is "É" decomposed (NFD, as macOS file names and some clients send it): the label is
    the name, read composed, and so are the parts' texts."""
    decomposed = "E\u0301mile: I live in Paris. Zoe\u0308: I live in Rome."
    assert speaker_of(decomposed).name == "\u00c9mile"
    assert [(p.kind, p.name, p.body) for p in parts_of(decomposed)] == [
        ("person", "\u00c9mile", "I live in Paris."),
        ("person", "Zo\u00eb", "I live in Rome."),
    ]
