"""Judges: verdicts by scoring, the text fallback that gives up after its retries, panels."""

from __future__ import annotations

import logging
import math

import pytest

from sparring.agents.judge import Judge, JudgeConfig, Panel
from sparring.errors import (
    BackendError,
    ContextOverflowError,
    EpisodeAbort,
    PrefillNotSupported,
    ScoringNotSupported,
)
from sparring.gameapi.game import ActionSpec
from sparring.prompts import prompt_set
from sparring.types import Completion, Sampling

from .helpers import ctx, drive

VERDICT = ActionSpec(kind="choice", tag="verdict", options=["Debater_A", "Debater_B"],
                     score_options=["A", "B"], assistant_prefix="Answer: ",
                     fallback_instruction="Reply 'Debater_A | NN%' or 'Debater_B | NN%'.")


def judge(name: str = "j", **cfg) -> Judge:
    return Judge(name, JudgeConfig(role="judge", model="m", **cfg), Sampling(), prompt_set("judge"))


def test_a_scored_verdict_is_the_softmax_over_the_options():
    action, batches = drive(judge().act(ctx(VERDICT)), lambda call: [math.log(0.2), math.log(0.6)])
    assert [c.op for b in batches for c in b] == ["score"]
    assert batches[0][0].request.options == ["A", "B"]
    assert action.probs == pytest.approx({"Debater_A": 0.25, "Debater_B": 0.75})
    assert action.meta["method"] == "score"


def test_without_scoring_the_judge_parses_generated_text_and_gives_up_after_its_retries():
    def answer(call):
        if call.op == "score":
            return ScoringNotSupported("no logprobs here")
        return [Completion(text="I cannot decide.")]

    with pytest.raises(EpisodeAbort, match="unparseable verdict after 3 attempts"):
        drive(judge(retries=2).act(ctx(VERDICT)), answer)

    replies = iter(["hmm", "Debater_B | 80%"])
    action, batches = drive(judge(retries=2).act(ctx(VERDICT)),
                            lambda c: ScoringNotSupported("x") if c.op == "score" else [Completion(text=next(replies))])
    assert [c.op for b in batches for c in b] == ["score", "generate", "generate"]
    assert action.probs == pytest.approx({"Debater_A": 0.2, "Debater_B": 0.8})
    assert action.meta["method"] == "generate" and action.meta["attempts"] == 2


def test_a_panel_averages_its_judges_and_records_every_vote():
    a, b = judge("a"), judge("b")
    panel = Panel("a+b", [a, b])

    def answer(call):  # judge a prefers A (0.9), judge b prefers B (0.7)
        return [math.log(0.9), math.log(0.1)] if call.meta["agent"] == "a" else [math.log(0.3), math.log(0.7)]

    action, batches = drive(panel.act(ctx(VERDICT)), answer)
    assert len(batches) == 1 and len(batches[0]) == 2  # both judges' calls go out in one batch
    assert action.meta["votes"] == {"a": pytest.approx({"Debater_A": 0.9, "Debater_B": 0.1}),
                                    "b": pytest.approx({"Debater_A": 0.3, "Debater_B": 0.7})}
    assert action.probs == pytest.approx({"Debater_A": 0.6, "Debater_B": 0.4})


def test_a_judge_without_scoring_asks_for_a_probability_and_says_how_it_decided():
    replies = iter(["Debater_A: the answer is Clover.", "Debater_A is right.", "Still Debater_A."])
    seen = []

    def answer(call):
        if call.op == "score":
            return ScoringNotSupported("no logprobs")
        seen.append(call.request.messages[-1].content)
        return [Completion(text=next(replies))]

    action, _ = drive(judge(retries=2).act(ctx(VERDICT)), answer)
    assert "probability" in seen[1] and "Debater_A | 70%" in seen[1]  # asked again, with the format
    assert action.meta["method"] == "generate_bare" and action.probs["Debater_A"] == 1.0


def test_a_model_that_cannot_continue_the_prefix_is_asked_for_the_letter_in_the_instruction():
    """The first refusal (PrefillNotSupported) switches the judge to instruction scoring for the
    rest of the run: the prefix is dropped, the last user turn asks for the letter, the options are
    the same, and the verdict says how it was obtained and what mass the options held."""
    j = judge()

    def answer(call):
        if call.request.assistant_prefix:
            return PrefillNotSupported("cannot score with assistant_prefix 'Answer: '")
        return [math.log(0.6), math.log(0.3)]

    action, batches = drive(j.act(ctx(VERDICT)), answer)
    calls = [c for b in batches for c in b]
    assert [c.request.assistant_prefix for c in calls] == ["Answer: ", ""]
    asked = calls[1].request
    assert asked.options == ["A", "B"]
    assert asked.messages[-1].content == "Decide.\n\nAnswer with the letter only: A or B."
    assert action.probs == pytest.approx({"Debater_A": 2 / 3, "Debater_B": 1 / 3})
    assert action.meta["method"] == "score_instruction" and action.meta["mass"] == pytest.approx(0.9)

    again, batches = drive(j.act(ctx(VERDICT)), answer)  # remembered: one call, no refused attempt
    assert [c.request.assistant_prefix for b in batches for c in b] == [""]
    assert again.meta["method"] == "score_instruction"


def test_a_scored_verdict_records_the_mass_of_its_options():
    action, _ = drive(judge().act(ctx(VERDICT)), lambda call: [math.log(0.2), math.log(0.6)])
    assert action.meta["mass"] == pytest.approx(0.8) and action.meta["logprobs"] == pytest.approx(
        [math.log(0.2), math.log(0.6)])


@pytest.mark.parametrize("error", [ScoringNotSupported("no logprobs"),
                                   BackendError("HTTP 400: logprobs are not supported", status=400)])
def test_scoring_that_cannot_work_falls_back_once_per_run_with_one_warning(error, caplog):
    j = judge()
    ops: list[str] = []

    def answer(call):
        ops.append(call.op)
        return error if call.op == "score" else [Completion(text="Debater_B | 80%")]

    with caplog.at_level(logging.WARNING, logger="sparring.agents.judge"):
        actions = [drive(j.act(ctx(VERDICT)), answer)[0] for _ in range(3)]
    assert ops == ["score", "generate", "generate", "generate"]  # scoring is not tried again
    assert [a.meta["method"] for a in actions] == ["generate"] * 3
    warnings = [r for r in caplog.records if "cannot score verdicts" in r.getMessage()]
    assert len(warnings) == 1 and str(error) in warnings[0].getMessage()


@pytest.mark.parametrize("error", [BackendError("gave up after 6 attempt(s); HTTP 503", status=503, retryable=True),
                                   ContextOverflowError("prompt too long", status=400)])
def test_a_failure_a_retry_or_another_prompt_may_fix_is_not_a_fallback(error):
    j = judge()
    with pytest.raises(BackendError):
        drive(j.act(ctx(VERDICT)), lambda call: error)
    assert j.scoring_off is None  # the next verdict tries scoring again


def test_verdict_score_never_falls_back():
    with pytest.raises(ScoringNotSupported):
        drive(judge(verdict="score").act(ctx(VERDICT)), lambda call: ScoringNotSupported("no"))


def test_a_panel_records_how_each_member_decided():
    a, b = judge("a"), judge("b")
    b.scoring_off = "ScoringNotSupported: no logprobs"  # b already gave up scoring in this run

    def answer(call):
        return [math.log(0.9), math.log(0.1)] if call.op == "score" else [Completion(text="Debater_B | 60%")]

    action, _ = drive(Panel("a+b", [a, b]).act(ctx(VERDICT)), answer)
    assert action.meta["vote_methods"] == {"a": "score", "b": "generate"}
