"""The shipped word lists (generated once from wordfreq by `make_wordlist`) and the split of
answers into train / val / test by a hash of the word itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparring.gameapi.splits import hash_split

DATA = Path(__file__).parent / "data"
GUESSES_FILE = DATA / "wordle_guesses.txt"
TARGETS_FILE = DATA / "wordle_targets.txt"
WORD_LENGTH = 5
FRACTIONS: dict[str, float] = {"train": 0.8, "val": 0.1, "test": 0.1}


def read_words(path: str | Path) -> list[str]:
    """One word per line; blank lines and `#` comments skipped; lower-cased, order kept."""
    out: list[str] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        w = line.strip().lower()
        if w and not w.startswith("#"):
            out.append(w)
    return out


def is_word_shape(word: str) -> bool:
    return len(word) == WORD_LENGTH and word.isascii() and word.isalpha()


def word_split(word: str, salt: str = "wordle") -> str:
    """Deterministic split of one answer (the same word is in one split on every machine)."""
    return hash_split(word, FRACTIONS, salt)


@dataclass
class Lexicon:
    """Valid guesses and possible answers, loaded once per game object (i.e. per run)."""

    guesses: frozenset[str]
    targets: tuple[str, ...]

    @classmethod
    def shipped(cls) -> Lexicon:
        targets = tuple(read_words(TARGETS_FILE))
        return cls(guesses=frozenset(read_words(GUESSES_FILE)) | frozenset(targets), targets=targets)
