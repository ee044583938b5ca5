"""Reading a guesser's or a critic's reply: `GUESS: word` (with an optional explanation) and
`VERDICT: keep|change`."""

from __future__ import annotations

import re
from dataclasses import dataclass

_GUESS = re.compile(r"guess\s*:\s*[*\"'`]*\s*([A-Za-z]+)", re.IGNORECASE)
_EXPLANATION = re.compile(r"explanation\s*:\s*(.*?)(?=\bguess\s*:|\Z)", re.IGNORECASE | re.DOTALL)
_VERDICT = re.compile(r"verdict\s*:\s*[*\"'`]*\s*([A-Za-z]+)", re.IGNORECASE)
_BARE = re.compile(r"^\W*([A-Za-z]+)\W*$")
_MARKER = re.compile(r"guess\s*:", re.IGNORECASE)
KEEP_WORDS = {"keep": "keep", "agree": "keep", "yes": "keep", "change": "change", "disagree": "change", "no": "change"}


class ParseError(ValueError):
    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code, self.detail = code, detail


@dataclass(frozen=True)
class ParsedGuess:
    word: str
    explanation: str


def parse_guess(text: str) -> ParsedGuess:
    """The last `GUESS: word` of the reply (or a reply that is one bare word)."""
    found = _GUESS.findall(text)
    if found:
        word = found[-1]
    else:
        bare = None if _MARKER.search(text) else _BARE.match(text.strip())
        if bare is None:
            raise ParseError("format", "no line of the form GUESS: word")
        word = bare.group(1)
    m = _EXPLANATION.search(text)
    if m:
        explanation = m.group(1).strip()
    else:
        head = _GUESS.split(text)[0] if found else ""
        explanation = head.strip()
    return ParsedGuess(word=word.lower(), explanation=explanation)


def parse_verdict(text: str) -> tuple[str, str]:
    """(keep | change, the critic's reason)."""
    m = _VERDICT.search(text)
    if m is None:
        raise ParseError("verdict", "no line of the form VERDICT: keep or VERDICT: change")
    verdict = KEEP_WORDS.get(m.group(1).lower())
    if verdict is None:
        raise ParseError("verdict", f"the verdict must be keep or change, not {m.group(1)!r}")
    reason = (text[: m.start()] + text[m.end():]).strip()
    reason = re.sub(r"^(reason|explanation)\s*:\s*", "", reason, flags=re.IGNORECASE)
    return verdict, reason
