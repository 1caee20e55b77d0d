"""Work and study: employer (works_at), job title, school (studies_at) and field of study.
Leaving a job ("I left Acme", "I quit my job at Acme", "I was laid off from Acme") is a negation of
works_at."""

from __future__ import annotations

import re

from engine.extract.rules.clauses import LEAD, Clause, Collector
from engine.extract.rules.dates import before_date
from engine.extract.rules.entities import PROFESSION_HEADS, is_org, is_place
from engine.extract.rules.text import SPACED_DASH, clean_object, cut_at, is_capitalized, word_set
from engine.letters import UPPER

#: present tense only ("I worked at Google" was a job, not the current one); one works "with" a tool, a
#: colleague or a partner, "at" or "for" an employer
_WORKS = re.compile(
    # a way of working between verb and employer says how, not where: "I work remotely for Stripe"
    r"^(?:(?:am|is|have been|has been) )?(?:work|works|working)"
    r"(?: (?:remotely|full[- ]time|part[- ]time|from home|now|currently|mostly))? (?:at|for) (?P<o>.+)$"
    r"|^(?:(?:have|has) (?:just |recently |finally |now )?)?(?:joined|started (?:a new job |working )?at"
    r"|got (?:a (?:new )?job|hired|an offer|a (?:new )?position) "
    r"(?:at|with|by)|(?:am|is) (?:employed|hired) (?:by|at)) (?P<o2>.+)$",
    re.IGNORECASE,
)
_LEFT = re.compile(
    r"^(?:(?:have|has) )?(?:left|quit|resigned from|retired from|(?:was|were|got) (?:laid off|fired|let go) "
    r"(?:from|by)|quit my job at|left my job at|left my position at) (?P<o>.+)$",
    re.IGNORECASE,
)
_OFFER = re.compile(
    r"^(?:got|received|had) (?:an? |the )?(?:job )?offer (?:from|at|with) (?P<o>.+?),? and (?:took|accepted) it\b"
    r"|^(?:accepted|took) (?:an? |the )?(?:job |position |role )?(?:offer )?(?:at|from|with) (?P<o2>.+)$",
    re.IGNORECASE,
)
_SWITCHED = re.compile(
    r"^(?:have |has )?(?:switched|changed) (?:jobs|companies|employers)\s*(?:[:\u2014]|-+|,)\s*(?:now (?:at |with )?)?(?P<o>.+)$"
    rf"|^(?:have |has )?(?:switched|changed|moved) (?:jobs |companies |employers )from (?-i:{UPPER}\S*(?: {UPPER}\S*){{0,2}}) "
    r"to (?P<o2>.+)$",
    re.IGNORECASE,
)
_AT_WORK = re.compile(rf"^am (?:now )?at (?P<o>(?-i:{UPPER}).+)$", re.IGNORECASE)
#: "working on" a task can be done anywhere: "I'm at Starbucks working on my resume" names no employer
_WORK_CUE = re.compile(
    r"\b(?:team|job|role|position|department|office|colleagues?|coworkers?|boss|manager|onboarding|"
    r"as an? [a-z]+|working(?! on\b)|work|notice|farewell|leaving (?:do|party|drinks))\b",
    re.IGNORECASE,
)
_FIRST_CUE = re.compile(r" (?:day|week|month) (?:at|with) ")
_FIRST_DAYS = re.compile(
    rf"^(?:(?:my|the) )?(?P<n>first|second|third|last) (?:day|week|month) (?:at|with) (?P<o>(?-i:{UPPER}).+)$",
    re.IGNORECASE,
)
_MY_EMPLOYER = re.compile(
    rf"\bmy (?:current |new |main )?(?:employer|workplace) is (?:now )?(?P<o>(?-i:{UPPER}).+)$", re.IGNORECASE
)
_AS = re.compile(
    r"^(?:work|works|working|am working|is working"
    r"|(?:have |has )?(?:just )?(?:started|got|took) (?:a |my |the )?(?:new )?(?:job|role|position|work)) as "
    r"(?:an? |the )?(?P<t>.+)$",
    re.IGNORECASE,
)
_IS_TITLE = re.compile(
    r"^(?:am|is|became|become|got promoted to|have become|has become|was promoted to) (?:an? |the |now an? )?"
    # a remark after a comma says how, not what ("a graphic designer, mostly working from home")
    r"(?P<t>[A-Za-z0-9][A-Za-z0-9 \-]*?)(?: (?:at|for|with|of) (?P<o>[^,]+))?(?:,.*)?$",
    re.IGNORECASE,
)
_MY_TITLE = re.compile(
    r"\bmy (?:job title|title|job|role|position|occupation) is (?!not\b)(?:an? |the )?(?P<t>[a-z][a-z \-]+)",
    re.IGNORECASE,
)
_STUDY = re.compile(
    r"^(?:(?:am|is) )?(?:study|studies|studying|majoring in|major in|doing a (?:phd|master'?s|degree|bachelor'?s) in) "
    # "studies are going well" is a noun's verb, not a field
    r"(?!at |(?:are|is|was|were|have|has|had|will|can|seem|seems|look|looks)\b)(?P<f>[A-Za-z][A-Za-z \-]*?)(?: at (?P<o>.+))?$",
    re.IGNORECASE,
)
_STUDENT_AT = re.compile(
    rf"^(?:am|is) (?:an? )?(?:\w+ )?student at (?P<o>.+)$|^(?:go|goes|going) to (?P<o2>{UPPER}.+)$"
    rf"|^(?:(?:am|is) )?(?:study|studies|studying) at (?P<o3>{UPPER}.+)$",
    re.IGNORECASE,
)
#: where an employer's name ends: a time ("until last year", "from 2015"), a place or a way of working
#: ("from home"), a remark ("which is nice", "(payments company)", " - loving it") or what one does there
_ORG_END = re.compile(
    r",|(?<!\s)\s++(?:as|in|since|for|because|on|and|but|where|after|with|this|last|next|yesterday|today|tonight|"
    r"tomorrow|before|until|till|from|then|which|who|while|working|doing|remotely)\b"
    rf"|(?<!\s)\s*+\(|(?<!\s){SPACED_DASH}"
)
_TITLE_CAPS = {"ceo": "CEO", "cto": "CTO", "cfo": "CFO", "coo": "COO"}


def _org(
    out: Collector, clause: Clause, raw: str, *, negated: bool | None = None, confidence: float = 0.85
) -> bool:
    text, dm = before_date(raw, out.reference)
    text = re.sub(r"^(?:my job at|my position at|my job with)\s+", "", text, flags=re.I)
    obj = clean_object(cut_at(_ORG_END, text))
    obj = re.sub(r"^the\s+", "", obj)
    if not obj or not is_capitalized(obj) or len(obj.split()) > 4 or is_place(obj):
        return False
    kind = "organization"
    eid = out.entity(obj, kind, 0.85 if is_org(obj) else 0.7)
    out.fact(clause, "works_at", eid, object_type="entity", object_name=obj, confidence=confidence,
             negated=negated, event_date=dm.iso if dm else None)  # fmt: skip
    return True


#: "a terrible cook", "a great driver": how well one does something, not one's job
_HOW_WELL = word_set(
    "good great bad terrible awful horrible lousy decent excellent amazing fantastic brilliant poor "
    "better worse best worst careful careless reckless slow fast messy picky natural born"
)


def _title(out: Collector, clause: Clause, raw: str, confidence: float) -> bool:
    title = re.sub(r"^\d+[- ]years?[- ]old\s+", "", clean_object(raw).strip())
    words = title.lower().split()
    if not words or len(words) > 5 or words[-1] not in PROFESSION_HEADS:
        return False
    if words[0] in _HOW_WELL or (words[0] in ("pretty", "really", "very", "such") and len(words) > 2):
        return False
    shown = " ".join(_TITLE_CAPS.get(w, w) for w in words)
    out.fact(clause, "job_title", shown, confidence=confidence)
    return True


def _self_statements(clause: Clause, out: Collector) -> None:
    """Sentence-level: "my job title is ...", "my employer is ...", "first week at Siemens done", "last
    day at Zalando, farewell drinks tonight"."""
    s, vp = clause.sentence, clause.vp
    m = _MY_TITLE.search(s)
    if m:
        _title(out, clause, re.split(r"\s+(?:at|for|with|of)\s", m.group("t"))[0], 0.85)
    m = _MY_EMPLOYER.search(s)
    if m:
        _org(out, clause, m.group("o"), negated=False, confidence=0.8)
    m = _FIRST_DAYS.match(LEAD.sub("", s).strip()) if not vp and _FIRST_CUE.search(s) else None
    if m and _WORK_CUE.search(s):  # "First week at Siemens done, the new job is intense"
        raw = re.split(r"\s+(?:done|finished|completed?|down|over|is|was|went|in the books)\b", m.group("o"))[
            0
        ]
        # one's last day at a job ends it
        _org(out, clause, raw, negated=m.group("n").lower() == "last", confidence=0.7)


#: an employer left without its name: "I don't work there anymore", "I quit my job", "I got fired"
_WORK_THERE = re.compile(
    r"^(?:work|works|am working) (?:there|for them|at that (?:company|place|firm))\b", re.IGNORECASE
)
_JOB_LEFT = re.compile(
    r"^(?:have |has |just |finally )*(?:quit|left|lost) (?:my|her|his|their) (?:day |old |full[- ]time )?job\b(?! (?:at|with|for)\b)"
    r"|^(?:was|were|got|have been|has been) (?:just )?(?:fired|laid off|let go)(?! (?:from|by)\b)"
    r"|^(?:retired|am retired|am now retired|have retired)(?! from\b)\b",
    re.IGNORECASE,
)
_WITH_EMPLOYER = re.compile(rf"^am with (?P<o>(?-i:{UPPER}).+)$", re.IGNORECASE)


def _works_or_left(clause: Clause, out: Collector, vp: str) -> None:
    """Works at (with a title after "as"), or left: a works_at negation."""
    if clause.is_self and (
        (clause.negated and _WORK_THERE.match(vp)) or (not clause.negated and _JOB_LEFT.match(vp))
    ):
        out.fact(clause, "works_at", None, confidence=0.7, negated=True)
    m = _WITH_EMPLOYER.match(vp) if clause.negated else None  # "I'm no longer with Acme"
    if m:
        _org(out, clause, m.group("o"), confidence=0.7)
    m = _WORKS.match(vp)
    if m:
        raw = m.group("o") or m.group("o2")
        _org(out, clause, raw)
        title = re.search(r"\bas (?:an? |the )?(?P<t>[a-z][a-z \-]+)$", raw)
        if title:
            _title(out, clause, title.group("t"), 0.8)
    m = _LEFT.match(vp)
    if m:
        _org(out, clause, m.group("o"), negated=True, confidence=0.85)


def _new_jobs_and_titles(clause: Clause, out: Collector, vp: str) -> None:
    """An accepted offer or a switch, "I'm at X" about work, "I work as ...", "I'm a ... at X"."""
    m = _OFFER.match(vp) or _SWITCHED.match(vp)
    if m:
        raw = m.group("o") or m.group("o2")
        _org(out, clause, re.split(r"\s+(?:now|instead of|rather than|after)\b", raw)[0], confidence=0.8)
    m = _AT_WORK.match(vp)
    # "I'm no longer at Google" ends a job as "I no longer work at Google" does
    if m and (clause.negated or _WORK_CUE.search(m.group("o"))):
        _org(out, clause, m.group("o"), confidence=0.7)
    m = _AS.match(vp)
    if m:
        parts = re.split(r"\s+(?:at|for|with)\s+", m.group("t"), maxsplit=1)
        if _title(out, clause, parts[0], 0.85) and len(parts) > 1:
            _org(out, clause, parts[1])
        return  # "am working as a barista" is no title "working as a barista"
    m = _IS_TITLE.match(vp)
    if m and m.group("t").lower().split()[-1:] == ["student"]:
        m = None  # "a student at X" is studies_at, in _studies
    if m and _title(out, clause, m.group("t"), 0.8) and m.group("o"):
        _org(out, clause, m.group("o"), negated=clause.negated)


def _studies(clause: Clause, out: Collector, vp: str) -> None:
    """Field of study and school."""
    m = _STUDY.match(vp)
    if m and not re.match(r"^(?:am|is) studying for\b", vp, re.I):
        field = clean_object(m.group("f"))
        if field and len(field.split()) <= 4:
            out.fact(clause, "studies", field, confidence=0.8)
        if m.group("o"):
            _school(out, clause, m.group("o"))
    m = _STUDENT_AT.match(vp)
    if m:
        _school(out, clause, m.group("o") or m.group("o2") or m.group("o3"))


def extract(clause: Clause, out: Collector) -> None:
    if clause.is_self:
        _self_statements(clause, out)
    vp = clause.vp
    if not vp:
        return
    if clause.plain_negation:  # "I don't work at Google" denies a guess: only "not ... anymore" ends a job
        return
    _works_or_left(clause, out, vp)
    _new_jobs_and_titles(clause, out, vp)
    _studies(clause, out, vp)


def _school(out: Collector, clause: Clause, raw: str) -> None:
    obj = clean_object(re.split(r",|\s+(?:in|since|for|and)\b", raw)[0])
    if obj and is_capitalized(obj) and len(obj.split()) <= 5:
        eid = out.entity(obj, "organization", 0.75)
        out.fact(clause, "studies_at", eid, object_type="entity", object_name=obj, confidence=0.8)
