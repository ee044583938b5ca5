"""Best-of-N is the agent's strategy over the engine's forks: scores, rejected candidates, max-min."""

from __future__ import annotations

import math

from sparring.agents.best_of_n import score_candidates
from sparring.agents.lookahead import BestOfN
from sparring.gameapi.game import Feedback

from .helpers import drive


class FakeLookahead:
    """Forks are just the candidate texts; the evaluator likes longer texts; 'bad' is rejected."""

    def __init__(self):
        self.opponent_calls = 0

    def try_action(self, text):
        fb = Feedback(accepted=False, correction="no") if "bad" in text else Feedback()
        return text, fb

    def opponent_replies(self, state, n):
        self.opponent_calls += 1
        return [f"{state}+reply{i}" for i in range(n)]
        yield  # a generator, as the engine's is

    def evaluate(self, states):
        return [len(s) / 100 for s in states]
        yield


def test_candidates_are_scored_by_the_evaluator_and_rejected_ones_never_win():
    scores, batches = drive(score_candidates(BestOfN(n=3), FakeLookahead(), ["short", "a bad long one", "longer"]),
                            lambda call: None)
    assert batches == []  # the fake evaluator makes no model calls
    assert scores[0] == 0.05 and scores[2] == 0.06 and scores[1] == -math.inf


def test_max_min_against_sampled_opponent_replies():
    look = FakeLookahead()
    scores, _ = drive(score_candidates(BestOfN(n=2, opponents=2, aggregate="min"), look, ["ab", "abcd"]),
                      lambda call: None)
    assert look.opponent_calls == 2
    assert scores == [len("ab+reply0") / 100, len("abcd+reply0") / 100]  # min over the two replies
