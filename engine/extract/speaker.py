"""Who says a turn: a turn saved as `<Name>: text` (the form that lets retrieval find both the
speaker and the topic) names its speaker, and its first person is that speaker, not the text's
label. Extraction reads the text after the label.

- `Name: ...` where Name is a person's name, titled or not ("Caroline: I moved to Berlin", "Dr. Smith:
  ...") -> a named speaker;
- a user role (`user:`, `human:`, `me:`, any case) -> the scope's user, as an unlabelled turn;
- an assistant role (`assistant:`, `ai:`, `bot:`, `agent:`, `system:`) -> the agent speaks: its "I"
  is not the user, so no first-person fact is taken from it;
- anything else ("Update: ...", "Note: ...", no label) -> unlabelled: the text as it is (extraction
  reads a sentence after such an opener as the speaker's, `rules.clauses.LEAD`).

A turn of several lines may hold several speakers ("Ann: I live in Rome\nBob: I live in Oslo"):
`parts_of` gives each labelled line's speaker the lines up to the next label. A labelled line may hold
the next speaker after a sentence's end ("Jon: I live in Denver. Gina: I live in Austin!").
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import msgspec

from engine.extract.rules.clauses import LABELS, LEAD, NAMES_WITH_NOUN_ENDINGS, NOUN_ENDINGS
from engine.extract.rules.entities import is_person_name
from engine.extract.rules.text import word_set
from engine.letters import LETTER, UPPER

SpeakerKind = Literal["none", "user", "agent", "person"]
USER_ROLES = frozenset({"user", "human", "me", "customer", "client"})
AGENT_ROLES = frozenset({"assistant", "ai", "bot", "agent", "system", "model"})
#: labels that head a line without naming a speaker ("Note: ..."): the text after them is read as unlabelled;
#: so are the labels of quoted or pasted text ("Translate: ...", an email's "From: ..."), whose words
#: are no speaker's own (`clauses.LEAD` does not strip them)
NOT_SPEAKERS = frozenset(LABELS) | word_set(
    "translate translation from to cc bcc sent date roleplay quote reply prompt input output reason "
    "price cost total time place location address phone email name source link score rating verdict "
    "conclusion plan step pros cons update"
)
#: a title before a name: "Dr. Smith" is a speaker of their own (ent:dr-smith), since "Mr. Smith" and
#: "Mrs. Smith" are two people
_TITLE = re.compile(rf"(?:Dr|Mr|Mrs|Ms|Mx|Prof)\.?\s+(?={UPPER})")
_LABEL = re.compile(rf"(?<!\s)\s*+({LETTER}[\w'.\-]{{0,40}}(?: {UPPER}[\w'.\-]{{0,40}}){{0,2}})\s*:\s+")


class Speaker(msgspec.Struct, frozen=True, kw_only=True):
    kind: SpeakerKind
    name: str | None = None  # a person's name (kind "person")
    body: str  # the text after the label (the whole text when unlabelled)


def _common_noun(label: str) -> bool:
    """One word that is a common noun by its ending ("Correction", "Announcement"), as `clauses.LEAD` reads it."""
    word = label.lower()
    return (
        " " not in word
        and len(word) > 5
        and word.endswith(NOUN_ENDINGS)
        and word not in NAMES_WITH_NOUN_ENDINGS
    )


def is_agent_turn(text: str) -> bool:
    """Whether the turn is labelled with an agent's role ("assistant: ..."): `speaker_of(text).kind ==
    "agent"` without reading a name's label any further."""
    found = _LABEL.match(text)
    return found is not None and found.group(1).lower() in AGENT_ROLES


def speaker_of(text: str) -> Speaker:
    """The speaker a turn's label names, and the text after it (see the module docstring); both read
    composed (NFC), so a label typed with combining accents ("E" + U+0301 "mile: ...") is a name."""
    text = unicodedata.normalize("NFC", text)
    found = _LABEL.match(text)
    if found is None:
        return Speaker(kind="none", body=text)
    label, body = found.group(1), text[found.end() :]
    if label.lower() in USER_ROLES:
        return Speaker(kind="user", body=body)
    if label.lower() in AGENT_ROLES:
        return Speaker(kind="agent", body=body)
    lead = LEAD.match(text)  # "Update: ...", "Good news: ..." open a sentence, they name nobody
    title = _TITLE.match(label)
    # a name is no common word: a label word or a common noun by its ending ("Correction:") names no one
    named = (
        is_person_name(label[title.end() :] if title else label)
        and label.split()[0].lower() not in NOT_SPEAKERS
        and (title is not None or not _common_noun(label))
    )
    if named and (lead is None or lead.end() < found.end()):
        return Speaker(kind="person", name=label, body=body)
    return Speaker(kind="none", body=text)


#: where a sentence ends and another may open with a speaker's label ("Dr." ends no sentence)
_NEXT_LABEL = re.compile(
    r"(?<=[.!?])(?<!\bDr\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bMx\.)(?<!\bProf\.)\s+"
    rf"(?={UPPER}[\w'.\-]{{0,40}}(?: {UPPER}[\w'.\-]{{0,40}}){{0,2}}\s*:\s)"
)


def _speakers_lines(text: str) -> list[str]:
    """The turn's lines, a labelled line cut where another speaker's label opens a sentence."""
    lines: list[str] = []
    for line in text.split("\n"):
        if speaker_of(line).kind == "none":
            lines.append(line)
            continue
        start = 0
        for cut in _NEXT_LABEL.finditer(line):
            if speaker_of(line[cut.end() :]).kind != "none":
                lines.append(line[start : cut.start()])
                start = cut.end()
        lines.append(line[start:])
    return lines


def parts_of(text: str) -> list[Speaker]:
    """The speakers of a turn in order, each with its part of the text: a line that opens with a
    speaker's label (a person, a user or an agent role) starts that speaker's part, as does such a label
    opening a sentence of a labelled line; other lines go on with the part before; consecutive parts of
    one speaker are one. The parts are composed text (NFC), as `speaker_of` reads it."""
    heads: list[Speaker] = []
    lines: list[list[str]] = []
    for line in _speakers_lines(unicodedata.normalize("NFC", text)):
        said = speaker_of(line)
        if heads and (said.kind == "none" or (said.kind, said.name) == (heads[-1].kind, heads[-1].name)):
            lines[-1].append(said.body)
        else:
            heads.append(said)
            lines.append([said.body])
    return [msgspec.structs.replace(h, body="\n".join(b)) for h, b in zip(heads, lines, strict=True)]
