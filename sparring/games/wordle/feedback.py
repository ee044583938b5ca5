"""Letter feedback exactly as the official game gives it, and what feedback tells about the answer.

Repeated letters: greens are marked first; each remaining (non-green) occurrence of a letter in
the guess is yellow, left to right, only while the answer still has unmatched copies of it —
answer ABBEY, guess BABES gives yellow yellow green green grey.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

GREEN, YELLOW, GREY = "G", "Y", "-"
COLOURS = {GREEN: "green", YELLOW: "yellow", GREY: "grey"}


def score_guess(guess: str, answer: str) -> str:
    """Feedback pattern of `guess` against `answer`: one of G / Y / - per letter."""
    guess, answer = guess.lower(), answer.lower()
    if len(guess) != len(answer):
        raise ValueError(f"guess {guess!r} and answer {answer!r} differ in length")
    return _pattern(guess, answer)


def _pattern(guess: str, answer: str) -> str:
    """`score_guess` of lower-case words of equal length (the hot loop of `consistent`)."""
    if guess == answer:
        return GREEN * len(guess)
    out = [GREY] * len(guess)
    left: list[str] = []  # answer letters not matched by a green
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            out[i] = GREEN
        else:
            left.append(a)
    for i, g in enumerate(guess):
        if out[i] != GREEN and g in left:
            out[i] = YELLOW
            left.remove(g)
    return "".join(out)


def is_win(pattern: str) -> bool:
    return bool(pattern) and all(c == GREEN for c in pattern)


def consistent(candidates: Iterable[str], guess: str, pattern: str) -> list[str]:
    """Candidates that would have produced `pattern` for `guess` (the ones still possible)."""
    guess = guess.lower()
    return [w for w in candidates if len(w) == len(guess) and _pattern(guess, w) == pattern]


def information_gain(before: int, after: int) -> float:
    """Bits learnt by one feedback: log2 of how much it shrank the set of possible answers."""
    if before <= 0 or after <= 0:
        return 0.0
    return math.log2(before / after)


def describe(guess: str, pattern: str) -> list[dict[str, str]]:
    """Per letter {letter, colour} (templates render the feedback from this)."""
    return [{"letter": g.upper(), "colour": COLOURS[p]} for g, p in zip(guess, pattern, strict=True)]
