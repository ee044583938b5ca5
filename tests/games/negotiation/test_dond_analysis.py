"""Negotiation metrics over finished games (hand-worked expectations)."""

from __future__ import annotations

import pytest
from dond_helpers import new_game, play

from sparring.games.negotiation import analysis as A
from sparring.games.negotiation.game import PLAYERS

P1, P2 = PLAYERS


def finished(outputs, **config):
    game, st = new_game(**config)
    play(game, st, outputs)
    assert game.is_over(st)
    return game.outcome(st).metrics


@pytest.fixture
def episodes():
    # Scenario: pool (1 book, 1 hat, 3 balls); P1 values (4, 3, 1), P2 values (0, 4, 2); P1 moves first.
    deal = finished(["[message] i take 1 book and 1 hat , you get 3 balls",
                     "[message] ok deal",
                     "[propose] (1 books, 1 hats, 0 balls)",     # X = 7
                     "[propose] (0 books, 0 hats, 3 balls)"])    # Y = 6 -> on the frontier, Nash 42 = max
    welfare = finished(["[message] you take the hat and 3 balls",
                        "[propose] (0 books, 1 hats, 3 balls)",  # P2 first: Y = 10
                        "bad output",                            # one correction for P1
                        "[propose] (1 books, 0 hats, 0 balls)"])  # X = 4 -> (4, 10), welfare 14 = max
    nodeal = finished(["[message] hi", "[message] hello", "[propose] (1 books, 1 hats, 1 balls)",
                       "[propose] (0 books, 1 hats, 2 balls)"])  # both claim the hat -> no deal
    aborted = finished(["x", "y"], max_errors=2)
    return [deal, welfare, nodeal, aborted]


def test_rates(episodes):
    assert A.agreement_rate(episodes) == 0.5
    assert A.abort_rate(episodes) == 0.25
    assert A.pareto_rate(episodes) == 0.5 and A.pareto_rate(episodes, among="deals") == 1.0
    assert A.welfare_optimal_rate(episodes) == 0.25 and A.welfare_optimal_rate(episodes, "deals") == 0.5
    # Nash ratios: 42/42, 40/42, 0, 0
    assert A.nash_ratio(episodes) == pytest.approx((1 + 40 / 42) / 4)


def test_rewards_by_player_and_seat(episodes):
    # rewards (self objective): (7, 6), (4, 10), (0, 0), (0, 0); P1 always moved first
    assert A.mean_reward_by_player(episodes) == {P1: 11 / 4, P2: 16 / 4}
    assert A.mean_reward_by_seat(episodes) == {"first_mover": 11 / 4, "second_mover": 16 / 4}
    assert A.mean_reward_by(episodes, lambda m, p: "all") == {"all": 27 / 8}


def test_errors_and_ceilings(episodes):
    # invalid outputs: 0, 1, 0, 2; accepted turns: 4, 3, 4, 0
    rates = A.error_rates(episodes)
    assert rates["corrections_per_turn"] == pytest.approx(3 / 11)
    assert rates["invalid_output_rate"] == pytest.approx(3 / 14)
    gaps = A.ceiling_gaps(episodes)
    # own gaps to 10: (3, 4), (6, 0), (10, 10), (10, 10) -> 53 / 8; welfare gaps: 1, 0, 14, 14
    assert gaps["points_gap"] == pytest.approx(53 / 8) and gaps["welfare_gap"] == pytest.approx(29 / 4)
    assert gaps["welfare_ratio"] == pytest.approx((13 / 14 + 1) / 4)


def test_dialogue_and_diversity(episodes):
    d = A.dialogue_length(episodes)
    assert d["turns"] == pytest.approx(11 / 4) and d["messages"] == pytest.approx(5 / 4)
    # whitespace tokens: 12 + 2, 7, 1 + 1, 0
    assert d["tokens"] == pytest.approx(23 / 4)
    lex = A.lexical_diversity([episodes[2]])   # "hi", "hello"
    assert lex == {"vocab_size": 2, "distinct_1": 1.0, "distinct_2": None}
    lex = A.lexical_diversity([episodes[0]])
    # "i take 1 book and 1 hat , you get 3 balls" + "ok deal": 14 tokens, 13 distinct ("1" twice)
    assert lex["vocab_size"] == 13 and lex["distinct_1"] == pytest.approx(13 / 14)
    assert lex["distinct_2"] == pytest.approx(12 / 12)


def test_proposal_consistency(episodes):
    deal, welfare, nodeal, _ = episodes
    assert A.proposal_consistent(deal, P1) is True and A.proposal_consistent(deal, P2) is True
    assert A.proposal_consistent(welfare, P1) is True      # "3 balls": P1 keeps 0 = 3 - 3 for P2
    assert A.proposal_consistent(nodeal, P1) is None      # no counts were named
    off = dict(deal, proposals={P1: [1, 0, 2], P2: [0, 1, 1]})
    assert A.proposal_consistent(off, P1) is False
    assert A.proposal_consistency(episodes) == {"rate": 1.0, "evaluated": 4}


def test_summarize_and_robustness(episodes):
    s = A.summarize(episodes + [{}, {"status": "failed"}])
    assert s["episodes"] == 4 and s["agreement_rate"] == 0.5
    for key in ("pareto_rate_deals", "welfare_optimal_rate_deals", "welfare_ratio", "points_gap", "welfare_gap",
                "corrections_per_turn", "invalid_output_rate", "dialogue_turns", "dialogue_messages",
                "dialogue_tokens", "vocab_size", "distinct_1", "distinct_2", "proposal_consistency",
                "reward_by_seat", "points_by_player"):
        assert key in s
    empty = A.summarize([])
    assert empty["episodes"] == 0 and empty["agreement_rate"] is None and empty["reward_by_player"] == {}


def test_optimality_is_judged_on_raw_points_under_comp():
    # Under comp the rewards are (1, -1) but the split (7, 6) is still Pareto-optimal on raw points.
    m = finished(["[message] a", "[message] b", "[propose] (1 books, 1 hats, 0 balls)",
                  "[propose] (0 books, 0 hats, 3 balls)"], objective="comp")
    assert m["rewards"] == {P1: 1.0, P2: -1.0} and A.pareto_rate([m]) == 1.0 and A.nash_ratio([m]) == 1.0


def test_deals_where_both_sides_score_tell_negotiation_from_capitulation(episodes):
    # A capitulation: P1 takes the whole pool (10 points to it), P2 accepts a deal worth 0 to it.
    taken = finished(["[message] all mine", "[message] ok", "[propose] (1 books, 1 hats, 3 balls)",
                      "[propose] (0 books, 0 hats, 0 balls)"])
    assert taken["deal"] is True and taken["points"] == {P1: 10, P2: 0} and taken["scored_both"] is False
    deal, welfare, nodeal, aborted = episodes
    assert deal["scored_both"] is True and welfare["scored_both"] is True and nodeal["scored_both"] is False
    games = [*episodes, taken]
    assert A.agreement_rate(games) == pytest.approx(3 / 5)   # the capitulation counts as agreement ...
    assert A.mutual_deal_rate(games) == pytest.approx(2 / 5)  # ... but not as a deal where both score
    assert A.mutual_deal_rate(games, among="deals") == pytest.approx(2 / 3)
    assert A.deal_splits(games) == [(6, 7), (4, 10), (0, 10)]
    assert A.split_histogram(games + [taken]) == {"0-10": 2, "4-10": 1, "6-7": 1}
    pts = A.points_in_deals(games)
    assert pts["deal_points_low"] == pytest.approx(10 / 3) and pts["deal_points_high"] == pytest.approx(9)
    # P1 moves first in every game: first mover 7, 4, 10; second mover 6, 10, 0
    assert pts["deal_points_first_mover"] == pytest.approx(7) and pts["deal_points_second_mover"] == pytest.approx(16 / 3)
    s = A.summarize(games)
    assert s["mutual_deal_rate"] == pytest.approx(2 / 5) and s["split_histogram"]["0-10"] == 1
