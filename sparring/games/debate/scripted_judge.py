"""A deterministic debate judge whose preference is known and learnable (the learning suite's
check that iterative DPO can move a debater at all, before trusting a model judge).

It reads the judge's prompt as any judge does — the answers in the system message, the speeches
as `Debater_X: ...` paragraphs, valid quotes already marked `<quote>` and invalid ones
`<invalid_quote>` by the game — and scores each debater X:

- +1 if X's speeches name X's answer (one of its words of 3+ letters);
- +2 per valid quote, at most 2 counted;
- +1 if a valid quote contains a word of X's answer (evidence for X's side);
- -1 per invalid quote, at most 2 counted;
- +0.01 per word outside quotes, at most 100 counted (a tie-breaker, so two speeches without
  quotes still differ a little and any policy gets preference pairs).

Its probability for answer X is softmax(score): `quote_judge_weights` returns exp(score) per
option, for the scripted backend's `score_mode: callable`. Registered as `quote-judge` in the
scripted models file.
"""

from __future__ import annotations

import math
import re
from typing import Any

SPEAKER = re.compile(r"^(Debater_[A-Z]):", re.MULTILINE)
ANSWER = re.compile(r"^([A-Z]): (.+)$", re.MULTILINE)
VALID = re.compile(r"<quote>(.*?)</quote>", re.IGNORECASE | re.DOTALL)
INVALID = re.compile(r"<invalid_quote>(.*?)</invalid_quote>", re.IGNORECASE | re.DOTALL)


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ letters: what "names the answer" and "supports it" compare."""
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3}


def speeches(text: str) -> dict[str, str]:
    """Letter -> everything that debater said in `text` (all rounds joined)."""
    out: dict[str, str] = {}
    marks = list(SPEAKER.finditer(text))
    for m, nxt in zip(marks, [*marks[1:], None], strict=True):
        end = nxt.start() if nxt else len(text)
        body = text[m.end():end]
        body = body.split("\n\nWhich answer", 1)[0]
        letter = m.group(1).rsplit("_", 1)[1]
        out[letter] = out.get(letter, "") + "\n" + body
    return out


def debater_score(speech: str, answer: str) -> float:
    words = content_words(answer)
    valid, invalid = VALID.findall(speech), INVALID.findall(speech)
    plain = INVALID.sub(" ", VALID.sub(" ", speech))
    score = 1.0 if words & content_words(plain) else 0.0
    score += 2.0 * min(len(valid), 2)
    score += 1.0 if any(words & content_words(q) for q in valid) else 0.0
    score -= 1.0 * min(len(invalid), 2)
    score += 0.01 * min(len(plain.split()), 100)
    return score


def quote_judge_weights(request: Any) -> list[float]:
    """exp(score) of each option's debater (options like " A", " B")."""
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    rest = "\n".join(m.content for m in request.messages if m.role != "system")
    answers = dict(ANSWER.findall(system))
    said = speeches(rest)
    out = []
    for option in request.options:
        letter = option.strip()[:1].upper()
        out.append(math.exp(debater_score(said.get(letter, ""), answers.get(letter, ""))))
    return out
