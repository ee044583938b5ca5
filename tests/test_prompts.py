"""PromptSet.references: which variables a template reads (what render memos key on)."""

from __future__ import annotations

from sparring.prompts import PromptSet


def test_references_lists_what_each_variant_reads():
    ps = PromptSet("t", {"turn": ["{% if can_propose %}{{ turns_left }} left{% endif %}{% set n = 2 %}{{ n }}",
                                  "{% for i in items %}{{ i.name }}{% endfor %} {{ action }}"],
                         "broken": ["{% if %}"]})
    assert ps.references("turn") == ("can_propose", "turns_left")  # set/loop variables are the template's own
    assert ps.references("turn", 1) == ("action", "items")
    assert ps.references("turn", 3) == ps.references("turn", 1)  # variants wrap around, as in render
    assert ps.references("missing") == () and ps.references("broken") == ()
