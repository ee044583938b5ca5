"""Letter feedback exactly as the official Wordle gives it, repeated letters included."""

from __future__ import annotations

import math

import pytest

from sparring.games.wordle.feedback import consistent, information_gain, is_win, score_guess


@pytest.mark.parametrize(("answer", "guess", "pattern"), [
    ("abbey", "babes", "YYGG-"),   # B twice in both: one green, one yellow; the S is grey
    ("crane", "eerie", "--Y-G"),   # the green final E uses up the answer's only E: the others are grey
    ("speed", "eerie", "YY---"),   # two E in the answer: the first two E are yellow, the third grey
    ("speed", "erase", "Y--YY"),   # both E yellow (left to right), S yellow
    ("abbey", "kebab", "-YGYY"),
    ("abbey", "abyss", "GGY--"),
    ("allow", "lolly", "YYG--"),   # only two L in ALLOW: the third L of LOLLY is grey
    ("crane", "crane", "GGGGG"),
    ("those", "geese", "---GG"),   # the E at position 4 is green; the other two E are grey
])
def test_official_feedback_with_repeated_letters(answer, guess, pattern):
    assert score_guess(guess, answer) == pattern


def test_case_is_ignored_and_lengths_must_match():
    assert score_guess("CRANE", "crane") == "GGGGG" and is_win("GGGGG") and not is_win("GGGG-")
    with pytest.raises(ValueError):
        score_guess("cranes", "crane")


def test_consistent_candidates_and_information_gain():
    words = ["crane", "crate", "trace", "about", "speed"]
    left = consistent(words, "crane", score_guess("crane", "crate"))
    assert "crate" in left and "crane" not in left and "about" not in left
    assert all(score_guess("crane", w) == score_guess("crane", "crate") for w in left)
    assert information_gain(8, 2) == pytest.approx(2.0)
    assert information_gain(5, 5) == 0.0 and information_gain(0, 0) == 0.0
    assert math.isclose(information_gain(2000, 1), math.log2(2000))
