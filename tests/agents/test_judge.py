"""Judges: verdicts by scoring, the text fallback that gives up after its retries, panels."""

from __future__ import annotations

import math

import pytest

from sparring.agents.judge import Judge, JudgeConfig, Panel
from sparring.errors import EpisodeAbort, ScoringNotSupported
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
