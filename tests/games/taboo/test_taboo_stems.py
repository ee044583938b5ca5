"""Which clue words break the taboo: stems, case and punctuation."""

from __future__ import annotations

import pytest

from sparring.games.taboo.stems import find_violation, stem, tokens


@pytest.mark.parametrize(("a", "b"), [
    ("run", "running"), ("run", "runs"), ("make", "making"), ("baby", "babies"), ("church", "churches"),
    ("box", "boxes"), ("walk", "walked"), ("stop", "stopped"), ("tree", "trees"), ("happy", "happily"),
    ("glass", "glasses"), ("hope", "hoping"), ("house", "houses"), ("child", "child's"),
])
def test_inflections_share_a_stem(a, b):
    assert stem(a) == stem(b)


@pytest.mark.parametrize(("a", "b"), [("car", "carpet"), ("sing", "sin"), ("star", "start"), ("bed", "bead")])
def test_different_words_keep_different_stems(a, b):
    assert stem(a) != stem(b)


def test_target_inflection_in_a_clue_is_a_violation():
    v = find_violation("Something you do when running, fast!", "run", ["jog", "sprint", "race"])
    assert v is not None and v.word == "running" and v.matched == "run" and v.kind == "target"


def test_taboo_words_case_and_punctuation_insensitive():
    v = find_violation("A place with BEDS... and 'Pillows'.", "bedroom", ["bed", "sleep", "pillow"])
    assert v is not None and v.kind == "taboo" and v.matched == "bed" and v.word == "beds"
    assert find_violation("It holds a mattress.", "bedroom", ["bed", "sleep", "pillow"]) is None
    assert find_violation("A carpet on the floor", "car", ["drive", "wheels", "vehicle"]) is None  # not a word of it


def test_multi_word_taboo_entries_and_hyphens():
    v = find_violation("A cold ice-cream treat", "sundae", ["ice cream", "cherry", "scoop"])
    assert v is not None and v.matched == "ice cream" and v.word == "ice cream"
    assert find_violation("Ice on a cold day", "sundae", ["ice cream"]) is None
    assert tokens("Don't use it!") == ["don't", "use", "it"]
