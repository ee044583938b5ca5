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
scripted models file. Two more judges with other rules read the same requests: the evidence judge
(`evidence-judge`: only quotes that tie the answer to the question) and the proof judge
(`proof-judge`: a stated answer backed by one short quote about what the question asks); see
their functions.
"""

from __future__ import annotations

import math
import re
from typing import Any

SPEAKER = re.compile(r"^(Debater_[A-Z]|Consultant):", re.MULTILINE)
ANSWER = re.compile(r"^([A-Z]): (.+)$", re.MULTILINE)
VALID = re.compile(r"<quote>(.*?)</quote>", re.IGNORECASE | re.DOTALL)
INVALID = re.compile(r"<invalid_quote>(.*?)</invalid_quote>", re.IGNORECASE | re.DOTALL)


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ letters: what "names the answer" and "supports it" compare."""
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3}


CONSULTANT_FOR = re.compile(r"argues? for answer ([A-Z])")


def speeches(text: str, consultant: str | None = None) -> dict[str, str]:
    """Letter -> everything that debater said in `text` (all rounds joined); a consultant's
    speeches count for `consultant`, the letter it argues for."""
    out: dict[str, str] = {}
    marks = list(SPEAKER.finditer(text))
    for m, nxt in zip(marks, [*marks[1:], None][: len(marks)], strict=True):
        end = nxt.start() if nxt else len(text)
        body = text[m.end():end]
        body = body.split("\n\nWhich answer", 1)[0]
        name = m.group(1)
        letter = consultant if name == "Consultant" else name.rsplit("_", 1)[1]
        if letter:
            out[letter] = out.get(letter, "") + "\n" + body
    return out


def _speeches_of(request: Any) -> tuple[str, dict[str, str]]:
    """(the judge's system text, letter -> speeches) of a judge's request."""
    system = "\n".join(m.content for m in request.messages if m.role == "system")
    rest = "\n".join(m.content for m in request.messages if m.role != "system")
    consultant = CONSULTANT_FOR.search(system)
    return system, speeches(rest, consultant.group(1) if consultant else None)


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
    system, said = _speeches_of(request)
    answers = dict(ANSWER.findall(system))
    out = []
    for option in request.options:
        letter = option.strip()[:1].upper()
        out.append(math.exp(debater_score(said.get(letter, ""), answers.get(letter, ""))))
    return out


QUESTION = re.compile(r"^Question: (.+)$", re.MULTILINE)
# words every question and answer shares, which say nothing about whose claim a quote supports
STOP = {"the", "and", "who", "what", "where", "which", "does", "did", "with", "has", "have", "was", "for",
        "that", "this", "from", "his", "her", "their", "its", "owner", "story", "live", "lives"}


def evidence_score(speech: str, answer: str, question: str) -> float:
    """What a verified quote is worth as evidence: +1 for each valid quote (at most 2) that
    contains a word of the answer AND a word of the question (it ties the answer to what is
    asked), -1 per invalid quote (at most 2); nothing for naming the answer, quoting at random or
    length."""
    a, q = content_words(answer) - STOP, content_words(question) - STOP - content_words(answer)
    valid, invalid = VALID.findall(speech), INVALID.findall(speech)
    support = sum(1 for quote in valid if content_words(quote) & a and content_words(quote) & q)
    return float(min(support, 2)) - float(min(len(invalid), 2))


def evidence_judge_weights(request: Any) -> list[float]:
    """The held-out judge of the debate experiment: exp(evidence_score) per option.

    Why it is a fair judge not used in training: it reads exactly what any judge is shown (the
    question, the two answers, the speeches with the game's verified and invalid quotes) and
    never the story, like the quote judge; but it credits a quote only as evidence that connects
    the answer to the question (the generated stories' distractor sentences mention the wrong
    answer, not with what the question asks about), and ignores what the quote judge rewards
    besides: naming the answer, any quote, length. A debater that learnt to please the quote
    judge does not please it unless it quotes evidence."""
    system, said = _speeches_of(request)
    answers = dict(ANSWER.findall(system))
    question = QUESTION.search(system)
    out = []
    for option in request.options:
        letter = option.strip()[:1].upper()
        out.append(math.exp(evidence_score(said.get(letter, ""), answers.get(letter, ""),
                                           question.group(1) if question else "")))
    return out


# the generated questions' own wording ("do for a living", "'s pet", "what kind of animal"), which
# the distractor's sentences share too ("earns a living as", "as a pet"): never the question's subject
TEMPLATE_WORDS = STOP | {"living", "pet", "animal", "kind", "object", "name", "named", "person", "town", "work",
                         "works", "own", "owns", "belongs", "belong", "called", "whose", "trade", "job"}
PROOF_WORDS = 25  # a proof quotes a sentence or two, not a passage


def subject_words(question: str, answers: list[str]) -> set[str]:
    """What the question asks about (a person's name, a town, an object, a job): its content
    words less the question's wording and both answers' words."""
    words = content_words(question) - TEMPLATE_WORDS
    for answer in answers:
        words -= content_words(answer)
    return words


def proof_score(speech: str, answer: str, other: str, question: str) -> float:
    """A stated answer with one proof: +1 if one valid quote of at most `PROOF_WORDS` words contains
    a word of the answer and a word of the question's subject and no word of the other answer
    (`proof`), +1 more if the speech also names its answer outside quotes; -1 per invalid quote (at
    most 2). A second proof, longer quotes, quotes about something else and length earn nothing."""
    mine = content_words(answer) - content_words(other) - STOP
    theirs = content_words(other) - content_words(answer) - STOP
    subject = subject_words(question, [answer, other])
    valid, invalid = VALID.findall(speech), INVALID.findall(speech)
    proof = any(len(q.split()) <= PROOF_WORDS and (w := content_words(q)) & mine and w & subject and not w & theirs
                for q in valid)
    claim = bool(mine & content_words(INVALID.sub(" ", VALID.sub(" ", speech))))
    return float(proof) + float(proof and claim) - float(min(len(invalid), 2))


def proof_judge_weights(request: Any) -> list[float]:
    """A held-out judge with another rule than the evidence judge: exp(proof_score) per option.

    Why: the evidence judge credits a quote that holds the answer and any question word, and the
    generated questions' own words ("living", "pet") also sit in the distractor's sentences
    ("earns a living as a tailor", "keeps a ferret as a pet"), so a debater arguing the wrong answer
    can earn its credit; quoting the same sentence twice, or a long passage, earns it twice. The
    proof judge credits one short quote about the question's subject that does not also mention the
    other answer, and the stated answer it proves: what a debater with the correct answer can give
    and one with the wrong answer cannot. Like the other judges it never reads the story."""
    system, said = _speeches_of(request)
    answers = dict(ANSWER.findall(system))
    question = QUESTION.search(system)
    out = []
    for option in request.options:
        letter = option.strip()[:1].upper()
        other = next((text for key, text in answers.items() if key != letter), "")
        out.append(math.exp(proof_score(said.get(letter, ""), answers.get(letter, ""), other,
                                        question.group(1) if question else "")))
    return out
