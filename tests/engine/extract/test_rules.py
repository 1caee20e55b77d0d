"""Unit tests of the rule extractor's parts: dates, quantities, entities, negation, PII, rendering."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.errors import UnknownName
from engine.extract import EXTRACTORS, create_extractor
from engine.extract.rules import RuleExtractor
from engine.extract.rules.dates import find_absolute, find_relative, human_date
from engine.extract.rules.quantities import parse_money, parse_quantity
from engine.extract.rules.rewrite import split_statement
from engine.extract.rules.text import (
    before_stray_quote,
    clean_object,
    hedged,
    is_statement,
    normalize_text,
    plain_text,
    slug,
    split_list,
    split_sentences,
)
from engine.models import is_blank

REF = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)


def fact_texts(text: str, **kwargs: Any) -> list[str]:
    """The texts of the facts the rules draft from `text` at `REF`."""
    return [f.text for f in RuleExtractor().extract(text, reference_time=REF, **kwargs).facts]


def facts(text: str, subject: str = "ent:user") -> list[tuple[str, str, object, str | None, bool]]:
    result = RuleExtractor().extract(text, subject=subject, reference_time=REF)
    return [(f.subject, f.predicate, f.object, f.unit, f.negated) for f in result.facts]


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("July 4, 1990", "1990-07-04"),
        ("4 July 1990", "1990-07-04"),
        ("the 12th of May", "--05-12"),
        ("1992-11-30", "1992-11-30"),
        ("07/04/1990", "1990-07-04"),  # US order
        ("Feb 29", "--02-29"),
        ("March 2019", "2019-03"),
    ],
)
def test_absolute_dates(text: str, iso: str) -> None:
    found = find_absolute(text)
    assert found is not None and found.iso == iso


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("yesterday", "2026-11-21"),
        ("tomorrow", "2026-11-23"),
        ("two weeks ago", "2026-11-08"),  # 22 - 14
        ("3 days ago", "2026-11-19"),
        ("a month ago", "2026-10-22"),
        ("last month", "2026-10"),
        ("next month", "2026-12"),
        ("last year", "2025"),
        ("in 2019", "2019"),
        # a day of a month named relative to today, a range's first day; no such day: the month
        ("on the 15th of last month", "2026-10-15"),
        ("from the 10th to the 14th of next month", "2026-12-10"),
        ("the 31st of next month", "2026-12-31"),
        ("the 31st of last month", "2026-10-31"),
        ("the 31st of this month", "2026-11"),
    ],
)
def test_relative_dates_resolve_against_the_reference(text: str, iso: str) -> None:
    found = find_relative(text, REF)
    assert found is not None and found.iso == iso


def test_month_arithmetic_clamps_the_day() -> None:
    ref = datetime(2026, 3, 31, tzinfo=UTC)
    found = find_relative("one month ago", ref)
    assert found is not None and found.iso == "2026-02-28"


def test_human_dates() -> None:
    assert human_date("1990-07-04") == "July 4, 1990"
    assert human_date("--03-03") == "March 3"
    assert human_date("2019-05") == "May 2019"
    assert human_date("2019") == "2019"


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("$800", 800, "USD"),
        ("$1,850", 1850, "USD"),
        ("2,000 euros", 2000, "EUR"),
        ("£1500", 1500, "GBP"),
        ("$85k", 85000, "USD"),
        ("€12.50", 12.5, "EUR"),
        ("5 km", 5, "km"),
        ("72 kg", 72, "kg"),
        ("42", 42, None),
    ],
)
def test_quantities(text: str, value: float, unit: str | None) -> None:
    q = parse_quantity(text)
    assert q is not None and q.value == value and q.unit == unit
    assert type(q.value) is type(value)


def test_control_characters_are_no_part_of_a_value() -> None:
    """A NUL, an escape or a zero-width space parts words as a space does; no fact carries one."""
    assert normalize_text("I live in\x00 Paris\u200b\x1b") == "I live in Paris"
    for text in ("I live in Paris\x00Berlin", "I work at Acme\u200b.", "I love\x07 jazz\ufeff"):
        facts = RuleExtractor().extract(text, reference_time=REF).facts
        assert facts and all(c.isprintable() for f in facts for c in f"{f.object}{f.object_name}{f.text}"), (
            facts
        )


@pytest.mark.parametrize(("text", "blank"), [("", True), (" \t\n", True), ("\x00", True), ("\u200b \ufeff", True),
                                             ("\u3164\u2800", True), ("\u0301", True), ("e\u0301", False),
                                             ("\u200b.", False), ("Paris", False)])  # fmt: skip
def test_is_blank(text: str, blank: bool) -> None:
    assert is_blank(text) is blank


def test_money_needs_a_currency() -> None:
    assert parse_money("5 km") is None


@settings(max_examples=3000, deadline=None)
@given(
    st.text(
        st.one_of(st.characters(), st.sampled_from("\u0301\u0338\u030f\u0130\u00f8\u00df\u0416")), max_size=12
    )
)
# a mark that composes with a letter folded to ASCII, one on a dropped symbol, a letter that only
# compatibility maps to a cased or a folded one
@example("A\u0300\u030f")
@example("0\u22ea")
@example("\U0001d6e2")
@example("\U00010783")
def test_a_slug_is_one_word_and_its_own_slug(name: str) -> None:
    """Any text gives a non-empty id word, which slugs to itself (an id read back as a name keeps it)."""
    word = slug(name)
    assert word and not any(c.isspace() for c in word)
    assert slug(word) == word


def test_text_helpers() -> None:
    assert normalize_text("I’m sure I can’t") == "I am sure I can not"
    assert slug("São Paulo") == "sao-paulo"
    # letters with no ASCII form keep theirs, so two such names are two ids (not both "x")
    assert [slug(n) for n in ("Søren", "Straße", "Łódź", "Ærø", "Борис", "Олег", "東京", "हिन्दी")] == [
        "soren",
        "strasse",
        "lodz",
        "aero",
        "борис",
        "олег",
        "東京",
        "हिन्दी",
    ]
    assert (
        slug("Zoe\u0301") == slug("Zoë") == "zoe" and slug("Café ☕ Bar") == "cafe-bar" and slug("☕") == "x"
    )
    assert clean_object("Berlin now.") == "Berlin"
    assert clean_object("Lisbon last month") == "Lisbon"
    assert split_list("peanuts, shellfish and latex") == ["peanuts", "shellfish", "latex"]
    assert split_list("rock and roll, jazz and R&B") == ["rock and roll", "jazz", "R&B"]


def test_statements_split_where_a_new_subject_follows_and_or_but() -> None:
    assert split_statement("My name is Sam and I am 29") == ["My name is Sam", "I am 29"]
    assert split_statement("I like tea, but my wife is into coffee") == [
        "I like tea",
        "my wife is into coffee",
    ]
    assert split_statement("I live in Paris and Anna lives in Rome") == [
        "I live in Paris",
        "Anna lives in Rome",
    ]
    # no verb before "and": one clause (the subject is "My wife Sarah and I")
    assert split_statement("My wife Sarah and I live in Denver") == ["My wife Sarah and I live in Denver"]
    # no subject after "and", or "my ..." without a verb: one clause
    assert split_statement("I love hiking and swimming") == ["I love hiking and swimming"]
    assert split_statement("I live with my wife and my kids") == ["I live with my wife and my kids"]
    assert split_statement("My parents are Tom and Anna") == ["My parents are Tom and Anna"]


def test_a_clause_of_what_one_has_now_after_what_one_had_is_its_own() -> None:
    assert split_statement("I used to live in Paris but now I live in Lyon") == [
        "I used to live in Paris",
        "I live in Lyon",
    ]
    assert split_statement("My wife works at Google while I work at Stripe") == [
        "My wife works at Google",
        "I work at Stripe",
    ]
    # the verb left out is the one of the clause before
    assert split_statement("I used to live in Paris, now Lyon") == [
        "I used to live in Paris",
        "I live in Lyon",
    ]
    assert split_statement("I no longer work at Google, I am at Stripe") == [
        "I no longer work at Google",
        "I work at Stripe",
    ]
    # "I am at" stands for nothing without such a clause before
    assert split_statement("I love my job, I am at the office") == ["I love my job", "I am at the office"]


@pytest.mark.parametrize(
    "sentence",
    ["Where do you live?", "If I lived in Paris I would be happy", "My friend thinks I work too much",
     "Thanks!", "Do you like jazz"],
)  # fmt: skip
def test_non_statements(sentence: str) -> None:
    assert not is_statement(sentence)


@pytest.mark.parametrize(
    ("clause", "is_hedged"),
    [
        ("I moved to Lyon so I could be near my mom", False),
        ("I moved to Lyon, which my friends said was crazy", False),
        ("I moved to Lyon because my wife would get a better job there", False),
        ("I moved to Lyon in May, if you need to know", False),
        ("If I lived in Tokyo I would eat sushi", True),
        ("I think I might move to Berlin", True),
        ("My friend thinks I live in Paris", True),
        ("I live in Paris, I think", True),
        ("I am 42, maybe", True),
    ],
)
def test_a_hedge_hedges_the_statement_it_is_part_of(clause: str, is_hedged: bool) -> None:
    assert hedged(clause) is is_hedged


def test_statements() -> None:
    assert is_statement("I live in Berlin.")
    assert is_statement("I would like to learn Spanish.")


def test_first_person_subject_is_the_given_entity() -> None:
    assert facts("I live in Berlin.", subject="ent:dana") == [
        ("ent:dana", "lives_in", "ent:berlin", None, False)
    ]


def test_moved_to_is_lives_in_with_the_stated_date_kept_aside() -> None:
    result = RuleExtractor().extract("I moved to Lisbon last month.", reference_time=REF)
    (fact,) = result.facts
    assert (fact.predicate, fact.object, fact.object_type, fact.object_name) == (
        "lives_in",
        "ent:lisbon",
        "entity",
        "Lisbon",
    )
    assert fact.event_date == "2026-10"
    assert fact.text == "User lives in Lisbon"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'd like to know more about the climate change situation there.", []),
        ("I want to ask about quilting patterns.", []),
        ("I'd like to get some ideas for a patio design.", []),
        ("I want to discuss the ethics of AI in healthcare.", []),
        ("I want to hear some tips on auditioning.", []),
        ("I want to know how to keep the momentum going.", []),
        # goals one holds, whatever the verb
        ("I want to learn more about photography.", ["User wants to learn more about photography"]),
        ("I want to hear some live jazz.", ["User wants to hear some live jazz"]),
        ("I want to get some rest this weekend.", ["User wants to get some rest"]),
        ("I want to ask for a raise.", ["User wants to ask for a raise"]),
        ("I plan to ask my boss for a raise.", ["User plans to ask their boss for a raise"]),
        ("I want to explore the old town.", ["User wants to explore the old town"]),
    ],
)
def test_a_request_of_the_talk_itself_is_no_goal(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("Unpacking boxes in Montreal, the move went fine.", "ent:montreal"),
        ("I am still unpacking boxes in Denver.", "ent:denver"),
        ("Settling into my new place in Montreal.", "ent:montreal"),
        ("We have finally settled into our new house in Porto.", "ent:porto"),
        ("The move to New York went smoothly.", "ent:new-york"),
        # no move told: a trip's bags, a garage, a job, a move that did not happen, someone else's boxes
        ("Unpacking in Paris after my vacation.", None),
        ("Unpacking boxes in the garage today.", None),
        ("Settling in at Google, the team is nice.", None),
        ("I settled into the new job at Google.", None),
        ("The move to Montreal was cancelled.", None),
        ("My sister is unpacking boxes in Rome.", None),
    ],
)
def test_a_move_told_by_what_follows_it_is_where_one_lives(text: str, place: str | None) -> None:
    expected = [("ent:user", "lives_in", place, None, False)] if place else []
    assert [f for f in facts(text) if f[1] == "lives_in"] == expected


@pytest.mark.parametrize(
    ("text", "goal", "when"),
    [
        # a goal cut before its date keeps no word that led into the date
        ("I'm trying to plan out my content for the next week.", "plan out their content", "2026-11-29"),
        ("I'm planning to practice with my partner a few times before next Saturday.",
         "practice with their partner a few times", None),
        ("I want to focus on the Instagram stories for now.", "focus on the Instagram stories", None),
        # a possessive date names a thing of the goal, not when it is
        ("I'm also planning to frame the concert ticket stub from today's show.",
         "frame the concert ticket stub from today's show", None),
        ("I want to watch tomorrow's game.", "watch tomorrow's game", None),
        # a goal that ends in a preposition keeps it
        ("I'm trying to find some new music to listen to.", "find some new music to listen to", None),
        ("I'm really hoping to move in now.", "move in", None),
        ("I want to visit a town like this again.", "visit a town like this", None),
        ("I'd love to attend the festival I volunteered at last year.",
         "attend the festival they volunteered at", "2025"),
    ],
)  # fmt: skip
def test_a_goal_cut_at_its_date_is_left_whole(text: str, goal: str, when: str | None) -> None:
    (fact,) = RuleExtractor().extract(text, reference_time=REF).facts
    assert (fact.object, fact.event_date) == (goal, when)


def test_a_goal_over_a_range_of_days_is_dated_by_its_first() -> None:
    text = "I'm planning to travel to San Francisco from the 10th to the 14th of next month."
    (fact,) = RuleExtractor().extract(text, reference_time=REF).facts
    assert (fact.object, fact.event_date) == ("travel to San Francisco", "2026-12-10")


@pytest.mark.parametrize(
    ("text", "owned"),
    [
        ("I just got my new Nike Vapor 13 cleats on the 15th of last month.", "Nike Vapor 13 cleats"),
        ("I also got my Fitbit scale on February 5th, and it's been great.", "Fitbit scale"),
    ],
)
def test_an_owned_thing_is_cut_before_its_date(text: str, owned: str) -> None:
    assert [(f.predicate, f.object) for f in RuleExtractor().extract(text, reference_time=REF).facts] == [
        ("owns", owned)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I love how it shows the togetherness and power you were talking about.",
        "I love how the show explores their struggles and growth, both in their careers and relationships.",
        "I like how they challenge me and help me build strength and flexibility.",
        "Yeah, I love to. It's peaceful and special.",
    ],
)
def test_a_clause_or_a_bare_to_after_likes_names_no_liked_thing(text: str) -> None:
    assert [
        f for f in RuleExtractor().extract(text, reference_time=REF).facts if f.predicate == "likes"
    ] == []


@pytest.mark.parametrize(
    ("text", "liked"),
    [
        # a reason ends the liked things, "especially" leads to one of them, or to when
        ("I love camping trips with my fam, 'cause nature brings such peace and serenity.",
         ["camping trips with their fam"]),
        ("I love Korean food, especially the spicy miso ramen.", ["Korean food", "spicy miso ramen"]),
        ("I also love to read, especially while snuggled under the covers.", ["to read"]),
        ("I love trying new foods, especially from different cultures.", ["trying new foods"]),
        ("I love the cause and the people.", ["cause", "people"]),
        # a dash starts a remark; "both" leads to the things
        ("I'm a big fan of pottery - the creativity and skill is awesome.", ["pottery"]),
        ("I love hiking\u2014it clears my head.", ["hiking"]),
        ("I love the 1990 - 2000 era.", ["1990 - 2000 era"]),
        ("I'm a fan of both jazz and blues.", ["jazz", "blues"]),
    ],
)  # fmt: skip
def test_liked_things_end_at_a_reason_and_especially_names_one(text: str, liked: list[str]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == "likes"] == liked


@pytest.mark.parametrize(
    ("text", "liked"),
    [
        # a pronoun or "these / those ..." points back at what was said: no thing of its own
        ("I like those ideas, but I need something cheaper.", []),
        ("I'm obsessed with those, so I made something.", []),
        ("I went to a parade and it was awesome - so much energy and love everywhere.", []),
        ("I'm much happier being around those who accept and love me.", []),
        ("I love one-pot pasta.", ["one-pot pasta"]),
    ],
)  # fmt: skip
def test_a_like_that_points_back_names_nothing(text: str, liked: list[str]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == "likes"] == liked


@pytest.mark.parametrize(
    ("text", "predicate", "values"),
    [
        # after "to" a liked verb keeps it: "User likes relax by reading" says nothing right
        ("I like to relax by reading.", "likes", ["to relax by reading"]),
        ("I love to swim, dance and do yoga.", "likes", ["to swim", "to dance", "to do yoga"]),
        ("I love to travel and hiking.", "likes", ["to travel", "hiking"]),
        # an aside is no liked thing, and "itself" is no part of one
        ("I also don't like bowling itself, to be honest.", "dislikes", ["bowling"]),
        # a part of a pronoun's thing points back; "the sound of X" approves X
        ("I enjoy the taste of these.", "likes", []),
        ("I don't really like any of those suggestions.", "dislikes", []),
        ("I love the awesome food of this city.", "likes", ["awesome food of this city"]),
        ("I like the sound of the lentil soup.", "likes", ["lentil soup"]),
        ("I like the sound of The Immortalists.", "likes", ["The Immortalists"]),
        ("I love the sound of those recipes!", "likes", []),
        # a clause after the liked things is none of them: a subject, a verb, "but", "of course"
        ("I love football, but, of course, the most important reason is to improve yourself.", "likes",
         ["football"]),
        ("I love fantasy and sci-fi movies, they're a great escape.", "likes", ["fantasy", "sci-fi movies"]),
        ("Yes, I really love cats, and they also need a home, love, and care.", "likes", ["cats"]),
        ("I love action and sci-fi movies, the effects are so cool!", "likes", ["action", "sci-fi movies"]),
        ("I love books that are engaging.", "likes", ["books that are engaging"]),
        ("I like making sure veterans are supported.", "likes", ["making sure veterans are supported"]),
        # "also", "like", "such as" lead to the thing
        ("I like also cheese pizza and prosciutto.", "likes", ["cheese pizza", "prosciutto"]),
        ("I'm into games now, like RPGs and strategy games.", "likes", ["games", "RPGs", "strategy games"]),
        # one favorite of several is a liked thing, not the single-valued favorite
        ("One of my favorite dishes is lasagna!", "likes", ["lasagna"]),
        ("One of my favorite dishes is lasagna!", "favorite_dishes", []),
    ],
)  # fmt: skip
def test_liked_things_read_as_said(text: str, predicate: str, values: list[str]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == predicate] == values
    assert all(not f.text.startswith("User likes to to") for f in facts)


def test_a_liked_verb_reads_as_a_sentence() -> None:
    (fact,) = RuleExtractor().extract("I like to relax by reading.", reference_time=REF).facts
    assert fact.text == "User likes to relax by reading"


@pytest.mark.parametrize(
    ("text", "learning"),
    [
        ("I'm still just learning how to draw, but I love writing.", ["how to draw"]),
        ("I've been learning Spanish for a few months now, but I feel stuck.", ["Spanish"]),
        ("I've been learning a lot about Agile methodologies lately.", ["about Agile methodologies"]),
        ("I'm learning German now - tough but fun.", ["German"]),
        ("I've been learning about aquarium keeping for about 6 months now.", ["about aquarium keeping"]),
        # nothing of its own: a verb joined on, or only what was said before
        ("I'm still learning and want to make sure I'm doing it correctly.", []),
        ("I've been learning so much from it.", []),
    ],
)  # fmt: skip
def test_what_one_learns_ends_where_its_clause_does(text: str, learning: list[str]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == "learning"] == learning


@pytest.mark.parametrize(
    ("text", "ages"),
    [
        # a bare number is an age only where nothing it counts follows
        ("I'm 2 episodes behind, and I don't want to fall too far behind.", []),
        ("I'm currently 10 books ahead of schedule.", []),
        ("Ratatouille is one of my favorites!", []),
        ("I'm 20, and I'm interested in a mix of activities.", [20]),
        ("I'm 32-year-old male, and I'm applying for a green card.", [32]),
        ("I'm 34 now.", [34]),
        ("I'm 29 years old and live in Oslo.", [29]),
    ],
)  # fmt: skip
def test_an_age_is_a_number_of_years(text: str, ages: list[int]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == "age"] == ages


def test_a_favorite_named_by_a_pronoun_is_no_value() -> None:
    text = "It's a tasty dish that's easy to make. It's my favorite comfort meal!"
    assert [
        f
        for f in RuleExtractor().extract(text, reference_time=REF).facts
        if f.predicate.startswith("favorite")
    ] == []
    assert facts("Lasagna is my favorite dish.") == [("ent:user", "favorite_dish", "Lasagna", None, False)]


def test_a_quoted_name_is_one_liked_thing() -> None:
    assert facts('I really like the "Before and After" post idea.') == [
        ("ent:user", "likes", '"Before and After" post idea', None, False)
    ]
    assert split_list("\u201cSalt and Pepper\u201d, jazz and blues") == [
        "\u201cSalt and Pepper\u201d",
        "jazz",
        "blues",
    ]
    # a list of liked things still splits; a title that starts with "What" is no clause
    liked = [f.object for f in RuleExtractor().extract("I love hiking, swimming and reading.").facts]
    assert liked == ["hiking", "swimming", "reading"]
    assert "Taboo" in [f.object for f in RuleExtractor().extract("I love What Do You Meme and Taboo.").facts]


@pytest.mark.parametrize(
    ("text", "goals"),
    [
        # a goal that only points back at what was said before tells an agent nothing
        ("Got any paintings to show? I'd love to check them out.", []),
        ("For sure! I'd love to do either of those things with you!", []),
        ("I'd love to try it sometime.", []),
        ("I want to try making it tonight.", []),
        ("I want to visit them.", []),
        # a thing of its own is enough
        ("I want to visit them in Lisbon.", ["visit them in Lisbon"]),
        ("I want to stay up.", ["stay up"]),
        ("It's important to me, and I want to help make that happen.", []),
        ("I want to make it to the finals.", ["make it to the finals"]),
        # a part of a pronoun's thing points back too
        ("I just moved into a place with a great backyard and I want to make the most of it.", []),
        ("I just want to get rid of it.", []),
        ("I want to keep track of them.", []),
        ("I want to visit the Museum of Modern Art.", ["visit the Museum of Modern Art"]),
    ],
)  # fmt: skip
def test_a_goal_that_only_points_back_is_no_goal(text: str, goals: list[str]) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate in ("goal", "plans")] == goals


@pytest.mark.parametrize(
    ("text", "plan", "when"),
    [
        # "going to" a place is a plan to go there, not a plan named by the place
        ("I'm going to a transgender conference this month.", "go to a transgender conference", "2026-11"),
        ("I'm going to Lisbon next week.", "go to Lisbon", "2026-11-29"),
        ("I'm going to try sushi.", "try sushi", None),
    ],
)  # fmt: skip
def test_going_to_a_place_is_a_plan_to_go_there(text: str, plan: str, when: str | None) -> None:
    (fact,) = RuleExtractor().extract(text, reference_time=REF).facts
    expected = ("plans", plan, f"User plans to {plan}", when)
    assert (fact.predicate, fact.object, fact.text, fact.event_date) == expected


def test_approximate_and_open_ended_times_are_trailers() -> None:
    assert clean_object("vinyl collecting about three months ago") == "vinyl collecting"
    assert clean_object("the Instagram stories for now") == "the Instagram stories"
    assert clean_object("my hair for the time being.") == "my hair"


def test_negations_are_marked() -> None:
    assert facts("I no longer work at Acme.") == [("ent:user", "works_at", "ent:acme", None, True)]
    assert ("ent:user", "eats", "meat", None, True) in facts("I don't eat meat anymore.")
    # a plain "don't like" is a dislike, not a negation
    assert facts("I don't like olives.") == [("ent:user", "dislikes", "olives", None, False)]


def test_numbers_carry_their_unit_and_a_readable_name() -> None:
    result = RuleExtractor().extract("My budget is now $800.", reference_time=REF)
    (fact,) = result.facts
    assert (fact.object, fact.unit, fact.object_type, fact.object_name) == (800, "USD", "number", "$800")
    assert fact.text == "User's budget is $800"


def test_contact_details_are_pii() -> None:
    result = RuleExtractor().extract(
        "My email is Dana@Example.com, call me at (415) 555-0134.", reference_time=REF
    )
    by_predicate = {f.predicate: f for f in result.facts}
    assert by_predicate["email"].object == "dana@example.com"
    assert by_predicate["phone"].object == "+14155550134"
    assert {f.sensitivity for f in result.facts} == {"pii"}


def test_someone_elses_email_without_a_name_is_not_the_users() -> None:
    assert facts("The support email is help@example.com.") == []


def test_third_person_and_relation() -> None:
    got = facts("My sister Anna lives in Rome.")
    assert got == [
        ("ent:user", "has_sibling", "ent:anna", None, False),
        ("ent:anna", "lives_in", "ent:rome", None, False),
    ]


def test_entities_of_every_kind() -> None:
    result = RuleExtractor().extract(
        "My sister Anna works at Google in London. I bought a MacBook Pro for $2,400 on March 3, 2026.",
        reference_time=REF,
    )
    kinds = {e.entity_id: e.type for e in result.entities}
    assert kinds["ent:anna"] == "person"
    assert kinds["ent:google"] == "organization"
    assert kinds["ent:london"] == "place"
    assert kinds["ent:macbook-pro"] == "product"
    assert kinds["ent:2026-03-03"] == "date"
    assert kinds["ent:2400-usd"] == "quantity"
    assert all(e.entity_id.startswith("ent:") for e in result.entities)


def test_confidence_is_in_range_and_deterministic() -> None:
    text = "I'm 34, I live in Berlin and I love jazz. My email is a@b.co."
    first = RuleExtractor().extract(text, reference_time=REF)
    second = RuleExtractor().extract(text, reference_time=REF)
    assert first == second
    assert first.facts and all(0.0 < f.confidence <= 1.0 for f in first.facts)
    assert not first.degraded and first.llm_tokens == 0


def test_multi_sentence_turn() -> None:
    got = facts("Hey! Quick update: I moved to Austin. My new budget is $1,200. What's new with you?")
    assert got == [
        ("ent:user", "lives_in", "ent:austin", None, False),
        ("ent:user", "budget", 1200, "USD", False),
    ]


def test_empty_text() -> None:
    result = RuleExtractor().extract("", reference_time=REF)
    assert result.facts == [] and result.entities == []


def test_registry() -> None:
    assert set(EXTRACTORS) == {"rules", "llm"}
    assert create_extractor("rules").name == "rules"
    with pytest.raises(UnknownName) as err:
        create_extractor("gpt")
    assert "llm" in str(err.value) and "rules" in str(err.value)


def test_people_named_in_any_sentence_are_entities_but_not_guessed_subjects() -> None:
    result = RuleExtractor().extract("Did you talk to Anna about Paris? Pizza is great.", reference_time=REF)
    kinds = {e.entity_id: e.type for e in result.entities}
    assert kinds == {"ent:anna": "person", "ent:paris": "place"}
    assert result.facts == []


_WORDS = ["I", "my", "live", "in", "Berlin", "work", "at", "Acme", "no", "longer", "love", "jazz", "$800",
          "budget", "is", "not", "anymore", "Anna", "sister", "email", "a@b.co", "and", ",", ".", "?", "'m",
          "don't", "5", "km", "born", "on", "July", "4", "2026", "allergic", "to", "peanuts", "named", "dog"]  # fmt: skip


@settings(max_examples=150)
@given(st.lists(st.sampled_from(_WORDS), max_size=25).map(" ".join) | st.text(max_size=200))
def test_never_raises_and_facts_are_well_formed(text: str) -> None:
    result = RuleExtractor().extract(text, reference_time=REF)
    assert result == RuleExtractor().extract(text, reference_time=REF)
    for f in result.facts:
        assert 0.0 <= f.confidence <= 1.0
        assert f.subject.startswith("ent:") and f.predicate and f.text
        assert f.object_type in ("string", "number", "date", "entity")
        if f.object_type == "entity":
            assert isinstance(f.object, str) and f.object.startswith("ent:")
        if f.object_type == "number":
            assert isinstance(f.object, int | float)
        if f.predicate in ("email", "phone"):
            assert f.sensitivity == "pii"


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I want to make sure I'm ready for my exam.", "User wants to make sure they are ready for their exam"),
        ("I plan to buy winter clothes before I leave my hometown.",
         "User plans to buy winter clothes before they leave their hometown"),
        ("I love camping trips with my fam, 'cause nature brings peace.", "User likes camping trips with their fam"),
        ("I want to take it easy and not push myself too hard.", "User wants to take it easy and not push themselves too hard"),
        # the people the speaker speaks for read as they do
        ("I want to make sure it is safe and fun for our two-year-old.",
         "User wants to make sure it is safe and fun for their two-year-old"),
        ("I want to make sure we have enough time for all the activities.",
         "User wants to make sure they have enough time for all the activities"),
        ("I want to find another game that'll give us a similar experience.",
         "User wants to find another game that'll give them a similar experience"),
        ("I love the US national parks.", "User likes US national parks"),
        # a title's words stay as written
        ('I want to read "Me Before You" again.', 'User wants to read "Me Before You"'),
        ("I love I Will Survive.", "User likes I Will Survive"),
        ("I love World War I history.", "User likes World War I history"),
    ],
)  # fmt: skip
def test_a_fact_about_the_speaker_reads_in_the_third_person(text: str, fact: str) -> None:
    assert fact_texts(text) == [fact]


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I am 40 years old.", "Melanie is 40 years old"),
        ("My favorite color is blue.", "Melanie's favorite color is blue"),
        ("My sister Anna lives in Rome.", "Melanie has a sibling named Anna"),
        ("My email is mel@example.com.", "Melanie's email is mel@example.com"),
        ("I want to make sure I'm ready for my exam.", "Melanie wants to make sure they are ready for their exam"),
        ("I no longer work at Acme.", "No longer true: Melanie works at Acme"),
        ("Melanie lives in Oslo.", "Melanie lives in Oslo"),
    ],
)  # fmt: skip
def test_a_fact_about_a_named_speaker_reads_with_their_name(text: str, fact: str) -> None:
    """`subject_name` names the first person in every predicate's text; other people keep theirs."""
    assert fact_texts(text, subject="ent:melanie", subject_name="Melanie")[0] == fact
    assert fact_texts("My sister Anna lives in Rome.", subject_name="Melanie")[1] == "Anna lives in Rome"


def test_the_speakers_words_about_someone_else_stay_theirs() -> None:
    """Only a fact about the speaker is turned to the third person: "my" in a fact about the speaker's
    sister is the speaker, not the sister."""
    facts = RuleExtractor().extract("My sister Anna loves my cooking.", reference_time=REF).facts
    assert all("their" not in f.text for f in facts)


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I love your turtles so much!", []),
        ("I'd love to hear your thoughts.", []),
        ("I'd love to join you and your pups for a walk.", []),
        ("I want to show you one of my snakes!", []),
        # what the listener offered is a thing one can want or like
        ("I'd like to try out the Rosemary Gin Fizz recipe you provided.",
         ["User wants to try out the Rosemary Gin Fizz recipe you provided"]),
        ('I love "Me Before You".', ['User likes Me Before You']),
    ],
)  # fmt: skip
def test_the_listeners_things_and_the_talk_itself_are_no_facts(text: str, facts: list[str]) -> None:
    assert fact_texts(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ('I also love "Brave" by Sara Bareilles, it is all about standing up for yourself.',
         ['User likes "Brave" by Sara Bareilles']),
        ('I like the sound of "The Memory Thief" and "The Royal Affair".',
         ['User likes "The Memory Thief"', "User likes The Royal Affair"]),
        ('I\'d like to check out "The Social Dilemma" and "The Last Dance".',
         ['User wants to check out "The Social Dilemma" and "The Last Dance"']),
        ('I love "Dune" and "Arrival".', ["User likes Dune", "User likes Arrival"]),
        ("I like The Cozy Cup.", ["User likes The Cozy Cup"]),
        ("I love the beach.", ["User likes beach"]),
        # a dash against the word before it still starts a remark
        ('We love "The Santa Clause" too- it\'s so heartwarming!', ["User likes The Santa Clause"]),
    ],
)  # fmt: skip
def test_a_quoted_title_keeps_its_quotes_and_its_article(text: str, facts: list[str]) -> None:
    assert fact_texts(text, subject="ent:tim") == facts


def test_a_title_abbreviation_ends_no_sentence() -> None:
    assert split_sentences("I want to visit St. Stephen's Basilica. Dr. Lee agrees.") == [
        "I want to visit St. Stephen's Basilica.",
        "Dr. Lee agrees.",
    ]


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("I moved to Lyon! so happy", ["I moved to Lyon!", "so happy"]),
        ("i live in Lyon. i work at Stripe. im 42", ["i live in Lyon.", "i work at Stripe.", "im 42"]),
        ("really? yes", ["really?", "yes"]),
        # an abbreviation, an initial or a dotted short form ends no sentence before a lower-case word
        ("I like fruit, e.g. apples. I live in Lyon.", ["I like fruit, e.g. apples.", "I live in Lyon."]),
        ("I saw Dr. lee and St. james, etc. and more", ["I saw Dr. lee and St. james, etc. and more"]),
        ("I met j. smith at 5 p.m. yesterday", ["I met j. smith at 5 p.m. yesterday"]),
        ("It costs 3.50 euros, approx. five dollars", ["It costs 3.50 euros, approx. five dollars"]),
    ],
)
def test_a_sentence_typed_in_lower_case_is_a_sentence(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("im 42", "I am 42"),
        ("ive moved", "I have moved"),
        ("i dont work here", "I do not work here"),
        ("she didnt, he doesnt, I cant", "she did not, he does not, I can not"),
        ("i'm here", "I am here"),
        # other words and the letter i stay: "i.e.", "ill", "its", "IM"
        ("i.e. ill, its IM client", "i.e. ill, its IM client"),
    ],
)
def test_the_lower_case_pronoun_and_contractions_without_an_apostrophe(text: str, normal: str) -> None:
    assert normalize_text(text) == normal


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("I just moved to Lyon, what are some good neighborhoods?", ["I just moved to Lyon", "what are some good neighborhoods?"]),
        ("I just moved to Lyon - any tips?", ["I just moved to Lyon", "any tips?"]),
        ("I'm 42, is it too late?", ["I'm 42", "is it too late?"]),
        # a question throughout, a tag question, a statement that asks nothing: one sentence
        ("Where do I live, do you know?", ["Where do I live, do you know?"]),
        ("I live in Paris, don't I?", ["I live in Paris, don't I?"]),
        ("I moved to Lyon, which is nice.", ["I moved to Lyon, which is nice."]),
    ],
)  # fmt: skip
def test_a_question_after_a_statement_is_a_sentence_of_its_own(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_an_ampersand_inside_a_name_joins_no_list() -> None:
    assert split_list("the Q&A session, R&D budgets & snacks") == ["the Q&A session", "R&D budgets", "snacks"]


@pytest.mark.parametrize(
    ("text", "goal"),
    [
        ("I'm determined to find the right spot - when I do, I'm sure the rest will follow!", "find the right spot"),
        ("I'm trying to make my plan work, even though it's been tough.", "make their plan work"),
        ("I'm training for a triathlon and need help with creating a workout schedule.", "train for a triathlon"),
        ("I'm preparing for a team meeting and want to make sure I'm well-prepared.", "prepare for a team meeting"),
        ("I want to try some guided imagery exercises, though.", "try some guided imagery exercises"),
        # a goal of two things stays whole
        ("I want to stay upbeat and learn as much as I can.", "stay upbeat and learn as much as they can"),
    ],
)  # fmt: skip
def test_a_goal_ends_where_its_own_clause_does(text: str, goal: str) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate in ("goal", "plans")] == [goal]


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I'd like to learn more about them.", []),
        ("I'm going to try making it tonight!", []),
        ("I also like holding them.", []),
        ("I want to know everything about it.", []),
        ("I used to love playing it when I was younger.", []),
        # what the value names itself stays
        ("I'd love to visit a retreat like that.", ["User wants to visit a retreat like that"]),
        ("I want to budget around $20-30 for that.", ["User wants to budget around $20-30 for that"]),
        ("I'd like to try the famous ramen shops there.", ["User wants to try the famous ramen shops there"]),
        ("I love it.", []),
        ("I love pottery.", ["User likes pottery"]),
        ("I want to make sure I'm doing it right.", []),
        ("I want to make sure I store them properly.", []),
        ("I love having them around.", []),
        # a value that names nothing at all
        ("I want to try something new.", []),
        ("I'd like to find something similar.", []),
        ("I love helping others.", ["User likes helping others"]),
        ("I love trying new things.", ["User likes trying new things"]),
    ],
)  # fmt: skip
def test_a_like_or_goal_that_points_back_or_names_nothing_is_no_fact(text: str, facts: list[str]) -> None:
    assert fact_texts(text) == facts


@pytest.mark.parametrize(
    ("text", "facts"),
    [
        ("I have a snake plant that's been doing well.", []),
        ("I'm thinking of repotting my Snake Plant.", []),
        ("I have a snake named Seraphim.", ["User has a snake named Seraphim"]),
        # the thing still says there is a pet
        ("I got a new dog bed for him.", ["User has a dog"]),
    ],
)  # fmt: skip
def test_a_pets_word_naming_a_plant_is_no_pet(text: str, facts: list[str]) -> None:
    assert fact_texts(text) == facts


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("I'm trying to keep my kitten Luna's skin healthy.", "User has a kitten named Luna"),
        ("By the way, my brother Michael's wife Rachel is doing great.", "User has a sibling named Michael"),
        ("My friend Sarah's adopted daughter turns five.", "User has a friend named Sarah"),
    ],
)
def test_a_name_read_with_its_possessive_is_the_name(text: str, fact: str) -> None:
    texts = fact_texts(text)
    assert fact in texts
    assert not any("'s" in t.split(" named ")[-1] for t in texts if " named " in t)


@pytest.mark.parametrize(
    ("text", "owned"),
    [
        ("I got my Samsung Galaxy S22 Ultra recently - I received an email from Amazon.", "Samsung Galaxy S22 Ultra"),
        ("I recently got a Samsung smartwatch myself, a Galaxy Watch.", "Samsung smartwatch"),
        ("I got my Toyota Camry serviced at the dealership.", "Toyota Camry"),
        ("I have a Fitbit too.", "Fitbit"),
    ],
)  # fmt: skip
def test_an_owned_things_name_ends_where_the_getting_is_told(text: str, owned: str) -> None:
    facts = RuleExtractor().extract(text, reference_time=REF).facts
    assert [f.object for f in facts if f.predicate == "owns"] == [owned]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I don't work at Google, I just use Gmail a lot.", []),
        ("I never worked at Google.", []),
        ("I do not work at Google.", []),
        ("I didn't work at Google.", []),
        ("I have not worked at Google.", []),
        ("I don't work for Google, I'm a freelancer.", ["User works as a freelancer"]),
        ("I don't work at Google, I work at Stripe.", ["User works at Stripe"]),
        # "anymore" ends the job
        ("I don't work at Google anymore.", ["No longer true: User works at Google"]),
    ],
)
def test_a_plain_negation_of_an_employer_states_no_employer(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one works "with" a tool, a colleague or a partner
        ("I mostly work with Python and Django.", []),
        ("I work with Sarah on the payments team.", []),
        ("I'm working with Google on a partnership deal.", []),
        ("I work with Sarah at Google.", []),
        ("Got a job with Dropbox!", ["User works at Dropbox"]),
        # a past "worked at" was a job, not the current one
        ("I worked at Google until last year.", []),
        ("I worked at Google for 3 years.", []),
        ("I worked at Google from 2015 to 2019.", []),
        ("Before Stripe, I worked at Google.", []),
        # an employer's name ends where a time starts
        ("I work at Google until June.", ["User works at Google"]),
        ("I left Initech before Christmas.", ["No longer true: User works at Initech"]),
        ("I've been working for Nvidia from the start.", ["User works at Nvidia"]),
    ],
)
def test_an_employer_is_worked_at_or_for_now(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a stay is a visit
        ("I'm staying in Lisbon for two weeks.", []),
        # after its unit, an age ends: "years into my career" counts something else
        ("I'm 5 years into my career and feeling stuck.", []),
        ("I'm 3 years sober today.", []),
        ("I'm 2 years into my PhD.", []),
        ("I'm 80 years old at heart lol", []),
        ("I'm 34 years old.", ["User is 34 years old"]),
        ("I'm 34 years old today!", ["User is 34 years old"]),
        ("I'm 42 btw", ["User is 42 years old"]),
        ("I'm a 29 year old nurse.", ["User is 29 years old", "User works as a nurse"]),
        # a number in words is read whole, never its first word
        ("I turned forty-two last week.", ["User is 42 years old"]),
        ("i just turned thirty one", ["User is 31 years old"]),
        ("I'm thirty-five.", ["User is 35 years old"]),
        ("I turned forty-something.", []),
    ],
)
def test_an_age_is_said_whole_and_a_stay_is_no_home(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to the UK in March.", ["User lives in the UK"]),
        ("I live in the Netherlands.", ["User lives in the Netherlands"]),
        ("I live in the Bay Area.", ["User lives in the Bay Area"]),
        ("I'm from the United States of America.", ["User is from the United States of America"]),
        ("I moved to the Marketing team.", []),
        # no longer being somewhere ends what "I live in"/"I work at" said
        ("I'm no longer at Google.", ["No longer true: User works at Google"]),
        ("I'm not in Paris anymore.", ["No longer true: User lives in Paris"]),
        ("I'm in Paris this week.", []),
        ("I'm at Google for a meeting.", []),
    ],
)
def test_a_place_after_the_and_being_there_no_longer(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


def test_a_place_after_the_is_the_place_named_without_it() -> None:
    assert (
        facts("I live in the UK.")
        == facts("I live in UK.")
        == [("ent:user", "lives_in", "ent:uk", None, False)]
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I moved to Lyon lol", ["User lives in Lyon"]),
        ("Finally moved to Lyon 🎉", ["User lives in Lyon"]),
        ("I moved to Lyon!!! 😊😊", ["User lives in Lyon"]),
        ("I live in Lyon actually.", ["User lives in Lyon"]),
        ("I live in Lyon btw", ["User lives in Lyon"]),
        ("I live in Lyon haha", ["User lives in Lyon"]),
        ("I live in Lyon now tho", ["User lives in Lyon"]),
        ("I live in Lyon fyi", ["User lives in Lyon"]),
        ("I live in Lyon xD", ["User lives in Lyon"]),
        ("I live in Lyon :)", ["User lives in Lyon"]),
        ("I live in Lyon which is nice", ["User lives in Lyon"]),
        ("I moved to Lyon - loving it", ["User lives in Lyon"]),
        ("I moved to Lyon from Paris.", ["User lives in Lyon"]),
        ("I work at Stripe rn", ["User works at Stripe"]),
        ("I work at IMO", ["User works at IMO"]),  # in capitals a name, not "in my opinion"
        ("I work at Stripe remotely.", ["User works at Stripe"]),
        ("I work at Stripe from home.", ["User works at Stripe"]),
        ("I work at Stripe (payments company).", ["User works at Stripe"]),
        ("I work at Stripe - loving it", ["User works at Stripe"]),
        ("I got fired from Google lol", ["No longer true: User works at Google"]),
        ("My name is Dr. Sam Smith.", ["User's name is Sam Smith"]),
        ("I'm at Starbucks working on my resume.", []),
        ("I'm at Intercom now on the growth team.", ["User works at Intercom"]),
    ],
)
def test_a_value_holds_no_chat_tail_remark_or_title(text: str, expected: list[str]) -> None:
    assert fact_texts(text) == expected


def test_emoji_and_emoticons_close_no_value() -> None:
    assert clean_object("Lyon 🎉") == clean_object("Lyon🎉") == clean_object("Lyon :D") == "Lyon"
    assert clean_object("Stripe (payments company)") == "Stripe (payments company)"


@pytest.mark.parametrize(
    ("composed", "fact"),
    [
        ("My name is Jos\u00e9.", "User's name is Jos\u00e9"),
        ("My name is Zo\u00eb", "User's name is Zo\u00eb"),
        ("My name is Chlo\u00e9.", "User's name is Chlo\u00e9"),
        ("I live in Saint-\u00c9tienne.", "User lives in Saint-\u00c9tienne"),
    ],
)
def test_decomposed_text_reads_as_the_composed_text(composed: str, fact: str) -> None:
    """NFD text (a letter, then its combining accent) gives the facts and values of its NFC form."""
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    assert fact_texts(decomposed) == fact_texts(composed) == [fact]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # what follows a value and cannot be part of it: hashtags, HTML, a pasted JSON string's end,
        # unpaired brackets, an ellipsis, CJK full-width punctuation, a dash, an escaped line break
        ("I live in Berlin #moving", ["User lives in Berlin"]),
        ("I work at Google #blessed #work", ["User works at Google"]),
        ("I work at Google</p>", ["User works at Google"]),
        ("I work at Google<br>", ["User works at Google"]),
        ('I work at Google", "age": 3', ["User works at Google"]),
        ('I work at Google."}}', ["User works at Google"]),
        ("I work at Google)", ["User works at Google"]),
        ("I work at Google]", ["User works at Google"]),
        ("I live in Berlin\u2026", ["User lives in Berlin"]),
        ("I live in Berlin\u3002", ["User lives in Berlin"]),
        ("I live in Berlin\uff0cand I like it", ["User lives in Berlin"]),
        ("I live in Berlin\uff01", ["User lives in Berlin"]),
        ("I live in Berlin \u2014 and love it", ["User lives in Berlin"]),
        ("I live in Berlin \u2013 and love it", ["User lives in Berlin"]),
        ("I live in Berlin - and love it", ["User lives in Berlin"]),
        ("I live in Berlin\\nI work at Google", ["User lives in Berlin", "User works at Google"]),
        ("I work at Google\\n", ["User works at Google"]),
        # a value wrapped in quotes of other languages or in markup is the words inside
        ("I live in \u00abBerlin\u00bb", ["User lives in Berlin"]),
        ("I live in \u00ab Berlin \u00bb", ["User lives in Berlin"]),
        ("I live in \u201eBerlin\u201c", ["User lives in Berlin"]),
        ("I work at **Google**", ["User works at Google"]),
        ("I work at __Google__", ["User works at Google"]),
        ("My favorite book is *Dune*.", ["User's favorite book is Dune"]),
        ("I work at `Google`", ["User works at Google"]),
        ("I work at [Google](https://google.com)", ["User works at Google"]),
        ("I work at <b>Google</b>.", ["User works at Google"]),
        ("I work at AT&amp;T.", ["User works at AT&T"]),
        ("I love #hiking", ["User likes hiking"]),
        # an emoji or a hashtag after an age
        ("I am 31 years old \U0001f382", ["User is 31 years old"]),
        ("I'm 31 \U0001f382\U0001f389", ["User is 31 years old"]),
        ("I am 31 #birthday", ["User is 31 years old"]),
        # punctuation that is part of the value stays
        ("I live in St. Louis.", ["User lives in St. Louis"]),
        ("I work at AT&T.", ["User works at AT&T"]),
        ("I work at Procter & Gamble.", ["User works at Procter & Gamble"]),
        ("I love C++.", ["User likes C++"]),
        ("I love C#.", ["User likes C#"]),
        ("I work at E*Trade.", ["User works at E*Trade"]),
        ('I work at Toys"R"Us.', ['User works at Toys"R"Us']),
        ("My name is Se\u00e1n O'Brien.", ["User's name is Se\u00e1n O'Brien"]),
        ("My name is Mary-Jane Watson.", ["User's name is Mary-Jane Watson"]),
        ("I live in Saint-\u00c9tienne.", ["User lives in Saint-\u00c9tienne"]),
        ('I love the song "Hello" by Adele.', ['User likes song "Hello" by Adele']),
        ("I love snake_case names", ["User likes snake_case names"]),
        ("My email is a_b_c@example.com.", ["User's email is a_b_c@example.com"]),
    ],
)
def test_a_value_ends_at_markup_and_punctuation_that_cannot_be_part_of_it(
    text: str, expected: list[str]
) -> None:
    assert fact_texts(text) == expected


def test_the_rules_read_text_without_markup() -> None:
    assert (
        plain_text("I work at **Google** and [Acme](https://a.b)<br>Bye\u3002")
        == "I work at Google and Acme\nBye. "
    )
    assert plain_text("it`s E*Trade, snake_case, 2 < 3 > 1") == "it`s E*Trade, snake_case, 2 < 3 > 1"
    assert plain_text("Jose\u0301 \u00abLyon\u00bb") == 'Jos\u00e9 "Lyon"'
    assert before_stray_quote('Google", "age": 3') == before_stray_quote('Google."}}')[:-1] == "Google"
    assert before_stray_quote('movie "Yes!"') == 'movie "Yes!"'


def test_a_fact_said_again_is_placed_where_it_was_last_said_only_past_its_own_kind() -> None:
    """A repeat moves after what it answers (another value of its key, its negation, its contrary
    stance), so the later statement wins; a plain repeat keeps its place, so a turn's first facts stay
    first (a turn writes its first 50)."""
    assert fact_texts("I'm 30. Sorry, I'm 31. No, I'm 30.") == [
        "User is 31 years old",
        "User is 30 years old",
    ]
    assert fact_texts("I like jazz. I hate jazz. I like jazz.") == ["User dislikes jazz", "User likes jazz"]
    assert fact_texts("I live in Paris. I work at Acme. I live in Paris.") == [
        "User lives in Paris",
        "User works at Acme",
    ]
