"""The scripted debate judges' rules on a generated story's own sentences: the evidence judge
credits quotes holding the answer and a question word (also the distractor's "earns a living as"
sentence, and a repeated quote twice); the proof judge credits one short quote about the question's
subject, and the stated answer it proves, and nothing the wrong side can quote."""

from __future__ import annotations

import math

import pytest

from sparring.games.debate.scripted_judge import (
    evidence_score,
    proof_judge_weights,
    proof_score,
    subject_words,
)
from sparring.types import Message, ScoreRequest

QUESTION = "What does Osric Penhallow do for a living?"
RIGHT, WRONG = "a brewer", "a schoolteacher"
KEY = "Osric earns a living as a brewer."                      # the sentence that answers the question
DISTRACTOR = "Corwin earns a living as a schoolteacher."      # the other person's job, same wording
BOTH = "Corwin earns a living as a schoolteacher. Osric earns a living as a brewer."


def q(text: str) -> str:
    return f"<quote>{text}</quote>"


def test_the_subject_is_what_the_question_asks_about_not_its_wording():
    assert subject_words(QUESTION, [RIGHT, WRONG]) == {"osric", "penhallow"}
    assert subject_words("What kind of animal is Nadia Calloway's pet?", ["a cat", "a ferret"]) == {"nadia", "calloway"}
    assert subject_words("Who owns the yellow umbrella?", ["Corwin Morrow", "Osric Penhallow"]) == {"yellow", "umbrella"}
    assert subject_words("What kind of pet does the brewer have?", ["a canary", "a parrot"]) == {"brewer"}


def test_the_proof_judge_credits_a_stated_answer_with_one_short_proof():
    assert proof_score(f"The answer is a brewer. {q(KEY)}", RIGHT, WRONG, QUESTION) == 2.0
    assert proof_score(q(KEY), RIGHT, WRONG, QUESTION) == 1.0            # a proof without the claim
    assert proof_score("The answer is a brewer.", RIGHT, WRONG, QUESTION) == 0.0  # a claim without a proof
    # nothing more for a second proof (the evidence judge counts it twice)
    assert proof_score(f"A brewer. {q(KEY)} {q(KEY)}", RIGHT, WRONG, QUESTION) == 2.0
    assert evidence_score(f"{q(KEY)} {q(KEY)}", RIGHT, QUESTION) == 2.0
    # a passage that also holds the other answer, or a long one, proves nothing
    assert proof_score(f"A brewer. {q(BOTH)}", RIGHT, WRONG, QUESTION) == 0.0
    long_quote = KEY + " He" + " works hard every day" * 6 + "."
    assert proof_score(f"A brewer. {q(long_quote)}", RIGHT, WRONG, QUESTION) == 0.0
    invalid = "<invalid_quote>Osric is a famous brewer</invalid_quote>"
    assert proof_score(f"A brewer. {invalid} {invalid} {invalid}", RIGHT, WRONG, QUESTION) == -2.0


def test_the_wrong_side_cannot_earn_the_proof_judges_credit_but_can_earn_the_evidence_judges():
    wrong = f"The answer is a schoolteacher. {q(DISTRACTOR)}"
    assert evidence_score(wrong, WRONG, QUESTION) == 1.0  # "living": a word of the question's wording
    assert proof_score(wrong, WRONG, RIGHT, QUESTION) == 0.0


def _request(speech_a: str, speech_b: str) -> ScoreRequest:
    system = f"You are the judge of a debate.\n\nQuestion: {QUESTION}\nA: {RIGHT}\nB: {WRONG}"
    user = f"Debater_A: {speech_a}\n\nDebater_B: {speech_b}\n\nWhich answer is correct? Reply with A or B."
    return ScoreRequest(messages=[Message(role="system", content=system), Message(role="user", content=user)],
                        options=[" A", " B"])


def test_the_proof_judge_reads_a_judge_request_and_is_registered_as_a_scripted_model():
    from sparring.models.registry import create_model, load_model_specs

    weights = proof_judge_weights(_request(f"The answer is a brewer. {q(KEY)}", f"A schoolteacher. {q(DISTRACTOR)}"))
    assert weights == pytest.approx([math.exp(2.0), 1.0])
    specs = load_model_specs("sparring/configs/experiments/models/scripted.yaml")
    judge = create_model("proof-judge", specs)
    (lp,) = judge.score([_request(f"The answer is a brewer. {q(KEY)}", "I am right.")])
    assert math.exp(lp[0]) == pytest.approx(math.exp(2) / (1 + math.exp(2)))
    (lp,) = judge.score([_request("I am right.", f"The answer is a schoolteacher. {q(DISTRACTOR)}")])
    assert math.exp(lp[1]) == pytest.approx(0.5)  # the wrong side's quote is no proof
