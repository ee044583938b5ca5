"""Regenerate the shipped word lists from `wordfreq` (run once by a maintainer, never at runtime):

    pip install wordfreq==3.1.1
    python -m sparring.games.wordle.make_wordlist

Why shipped files: runs must not depend on wordfreq's data version, and splits are by word, so
the lists must be byte-identical on every machine.
"""

from __future__ import annotations

import importlib
from pathlib import Path

DATA = Path(__file__).parent / "data"
GUESS_VOCAB = 100_000   # words of wordfreq's English list scanned for valid guesses
N_TARGETS = 2_000       # most frequent five-letter words kept as answers (plurals left out)


def five_letter(words: list[str]) -> list[str]:
    return [w for w in words if len(w) == 5 and w.isascii() and w.isalpha() and w.islower()]


def main() -> None:
    wf = importlib.import_module("wordfreq")
    guesses = five_letter(wf.top_n_list("en", GUESS_VOCAB))

    def plural(w: str) -> bool:  # "cards" when "card" is a common word: not an answer (as in Wordle)
        return w.endswith("s") and not w.endswith(("ss", "us", "is")) and wf.zipf_frequency(w[:-1], "en") >= 3.0

    targets = [w for w in guesses if not plural(w)][:N_TARGETS]
    header = f"# wordfreq {getattr(wf, '__version__', '3.1.1')} top_n_list('en', {GUESS_VOCAB}), five lowercase ASCII letters"
    (DATA / "wordle_guesses.txt").write_text("\n".join([header, *guesses]) + "\n")
    (DATA / "wordle_targets.txt").write_text(
        "\n".join([header + f"; the {N_TARGETS} most frequent, plurals left out", *targets]) + "\n")
    print(f"{len(guesses)} guesses, {len(targets)} targets -> {DATA}")


if __name__ == "__main__":
    main()
