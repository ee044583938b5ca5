"""Scripted Taboo players for fast tests and smoke runs (`backend: scripted, mode: callable`).

`describer` never names the word: it gives its length, then its first letter, then its first two
letters. `guesser` answers with the first word of the shipped list that fits every hint so far
(and was not guessed yet), so scripted games succeed in rounds 1-3 or fail, deterministically.
"""

from __future__ import annotations

import json
import re

from sparring.games.taboo.instance import WORDS_FILE
from sparring.types import GenerateRequest

_TARGET = re.compile(r"Target word: (.+)")
_LENGTH = re.compile(r"has (\d+) letters")
_START = re.compile(r'starts with "([a-z]+)"')
_GUESS = re.compile(r"GUESS:\s*(\S+)", re.IGNORECASE)


def describer(request: GenerateRequest) -> str:
    system = request.messages[0].content if request.messages else ""
    m = _TARGET.search(system)
    target = m.group(1).strip().lower() if m else "x"
    rnd = sum(msg.role == "assistant" for msg in request.messages)
    hint = f"has {len(target)} letters"
    if rnd >= 1:
        hint += f' and starts with "{target[:rnd]}"'
    return f"CLUE: The word I mean {hint}."


def guesser(request: GenerateRequest) -> str:
    words = [w["word"] for w in json.loads(WORDS_FILE.read_text(encoding="utf-8"))["words"]]
    said = {g.lower() for msg in request.messages if msg.role == "assistant" for g in _GUESS.findall(msg.content)}
    length, start = None, ""
    for msg in request.messages:
        if msg.role == "user":
            if (lm := _LENGTH.search(msg.content)) is not None:
                length = int(lm.group(1))
            if (sm := _START.search(msg.content)) is not None:
                start = sm.group(1)
    fits = [w for w in words if (length is None or len(w) == length) and w.startswith(start) and w not in said]
    return f"GUESS: {fits[0] if fits else 'nothing'}"
