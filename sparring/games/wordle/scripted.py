"""Scripted Wordle players for fast tests and smoke runs (`backend: scripted, mode: callable`).

`solver` reads its own earlier guesses and the feedback lines back from the conversation and
guesses the first shipped answer still consistent with all of them — a real (greedy) player, so
scripted runs win in a few guesses. `critic` always says keep.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sparring.games.wordle.feedback import GREEN, GREY, YELLOW, consistent
from sparring.games.wordle.words import TARGETS_FILE, read_words
from sparring.types import GenerateRequest

_FEEDBACK = re.compile(r"Feedback for ([A-Z]{5}): ((?:[A-Z] (?:green|yellow|grey)(?:, )?){5})")
_CODES = {"green": GREEN, "yellow": YELLOW, "grey": GREY}


def _history(request: GenerateRequest) -> list[tuple[str, str]]:
    out = []
    for m in request.messages:
        if m.role != "user":
            continue
        for word, letters in _FEEDBACK.findall(m.content):
            pattern = "".join(_CODES[c.split()[1]] for c in letters.split(", "))
            out.append((word.lower(), pattern))
    return out


@lru_cache(maxsize=1)
def _answers() -> tuple[str, ...]:
    """The shipped answers, read once per process (a test double: speed over purity)."""
    return tuple(read_words(TARGETS_FILE))


def solver(request: GenerateRequest) -> str:
    candidates = list(_answers())
    for word, pattern in _history(request):
        candidates = consistent(candidates, word, pattern)
    guess = candidates[0] if candidates else "about"
    return f"EXPLANATION: {len(candidates)} answers fit the feedback so far.\nGUESS: {guess}"


def critic(request: GenerateRequest) -> str:
    return "VERDICT: keep\nREASON: it fits the feedback."
