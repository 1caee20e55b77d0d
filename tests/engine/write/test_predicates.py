"""The predicate registry: canonical names, aliases, single- vs multi-valued, rendering."""

from __future__ import annotations

from engine.write.predicates import (
    MAX_KEY,
    PREDICATES,
    canonical,
    conflict_key,
    is_single_valued,
    render,
    spec_for,
)


def test_aliases_map_to_registered_names() -> None:
    assert canonical("moved_to") == "lives_in"
    assert canonical("Married To") == "spouse"
    assert canonical("works-for") == "works_at"
    assert canonical("favourite_color") == "favorite_color"
    assert canonical("lives_in") == "lives_in"


def test_single_and_multi_valued() -> None:
    for name in ("lives_in", "works_at", "age", "name", "budget", "email", "spouse", "diet", "moved_to"):
        assert is_single_valued(name), name
    for name in ("likes", "dislikes", "has_pet", "has_child", "allergic_to", "goal", "speaks"):
        assert not is_single_valued(name), name


def test_unknown_predicates() -> None:
    assert is_single_valued("favorite_cheese")
    assert (
        spec_for("favorite_cheese").template.format(s="User", o="brie", a="a")
        == "User's favorite cheese is brie"
    )
    unknown = spec_for("collects")
    assert not unknown.single_valued and unknown.name == "collects"


def test_every_spec_renders() -> None:
    for name, spec in PREDICATES.items():
        assert spec.name == name
        text = render("User", name, "X")
        assert "User" in text and "X" in text and "{" not in text


def test_render_examples() -> None:
    assert render("User", "lives_in", "Berlin") == "User lives in Berlin"
    assert render("User", "moved_to", "Berlin") == "User lives in Berlin"
    assert render("User", "job_title", "engineer") == "User works as an engineer"
    assert render("User", "works_at", "Acme", negated=True) == "No longer true: User works at Acme"


def test_conflict_key() -> None:
    assert conflict_key("ent:user", "moved_to") == "ent:user|lives_in"
    assert len(conflict_key("ent:" + "x" * 200, "lives_in")) == MAX_KEY


def test_an_over_long_key_keeps_its_predicate_and_its_subject_apart() -> None:
    """Cut at 128 characters, a long subject's keys all lost their predicate and collided."""
    long_a, long_b = "ent:" + "a" * 123, "ent:" + "a" * 122 + "b"  # 127 characters, one start
    keys = {(s, p): conflict_key(s, p) for s in (long_a, long_b) for p in ("lives_in", "age", "works_at")}
    assert len(set(keys.values())) == len(keys)
    assert all(len(k) <= MAX_KEY and k.endswith(f"|{p}") for (_, p), k in keys.items())
    assert conflict_key(long_a, "moved_to") == keys[(long_a, "lives_in")]  # stable, aliases resolved
    long_predicate = "favorite_" + "x" * 119
    assert conflict_key("ent:user", long_predicate).startswith("ent:user|favorite_")
    both = {conflict_key(s, p) for s in (long_a, long_b) for p in (long_predicate, long_predicate + "y")}
    assert len(both) == 4 and all(len(k) <= MAX_KEY for k in both)


def test_contact_predicates_are_pii() -> None:
    assert spec_for("email").pii and spec_for("phone").pii and not spec_for("lives_in").pii
