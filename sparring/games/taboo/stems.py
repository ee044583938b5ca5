"""Which words of a clue break the taboo: case- and punctuation-insensitive, compared on stems.

A small suffix-stripping stemmer (plural -s/-es/-ies, -ing, -ed, -ly, possessive 's, a final -e,
doubled consonants) so that inflections count: "running" and "runs" say "run". Derivations that
change the word ("runner", "ran") are not caught, as with Porter-style stemmers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_VOWELS = set("aeiouy")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens; punctuation and hyphens separate words ("ice-cream" -> ice, cream)."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def stem(word: str) -> str:
    w = word.lower().strip("'")
    if w.endswith("'s"):
        w = w[:-2]
    w = w.replace("'", "")
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith(("ches", "shes", "xes", "zes")) and len(w) > 4:
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
        w = w[:-1]
    stripped = False
    for suffix in ("ing", "ed"):
        base = w[: -len(suffix)]
        if w.endswith(suffix) and len(base) >= 3 and _VOWELS & set(base):
            w, stripped = base, True
            break
    else:
        if w.endswith("ily") and len(w) >= 6:
            w = w[:-3] + "y"  # happily -> happy
        elif w.endswith("ly") and len(w) >= 6:
            w = w[:-2]
    if stripped and len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1] not in _VOWELS:
        w = w[:-1]  # running -> runn -> run
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]  # make / making -> mak
    return w


@dataclass(frozen=True)
class Violation:
    """The first clue word that says a forbidden word: what was written and which word it matched."""

    word: str
    matched: str
    kind: str  # "target" or "taboo"


def find_violation(clue: str, target: str, taboo: list[str]) -> Violation | None:
    """The first word (or run of words, for multi-word entries) of `clue` whose stems equal the
    target's or a taboo word's; None if the clue is clean."""
    words = tokens(clue)
    stems = [stem(w) for w in words]
    banned = [(target, "target")] + [(t, "taboo") for t in taboo]
    for i in range(len(stems)):
        for entry, kind in banned:
            pat = [stem(w) for w in tokens(entry)]
            if pat and stems[i : i + len(pat)] == pat:
                return Violation(word=" ".join(words[i : i + len(pat)]), matched=entry, kind=kind)
    return None
