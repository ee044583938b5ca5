"""Typed game metrics: one definition (name, direction, interval) per metric, measured from
records into values with their intervals; the loop reads these, not report strings."""

from __future__ import annotations

import pytest

from sparring.analysis.measures import matchup_metrics, measure
from sparring.gameapi.game import Outcome
from sparring.gameapi.hooks import Metric
from sparring.records.record import EpisodeRecord, SeatRecord
from sparring.stats.stats_tests import wilson_interval


def _rec(i: int, agents: tuple[str, str], status: str = "complete", **metrics) -> EpisodeRecord:
    seats = {"Player_1": SeatRecord(agent=agents[0], model="m", role="negotiator"),
             "Player_2": SeatRecord(agent=agents[1], model="m", role="negotiator")}
    metrics = {"points": {"Player_1": 8, "Player_2": 10}, "counts": [1, 1, 4],  # a Pareto-optimal split
               "values": {"Player_1": [0, 2, 2], "Player_2": [5, 5, 0]}, **metrics}
    outcome = Outcome(rewards={"Player_1": 1.0, "Player_2": 0.0}, metrics=metrics)
    return EpisodeRecord(id=str(i), experiment="e", game="dond", instance_id=str(i), seed=0, status=status,
                         seats=seats, outcome=None if status == "failed" else outcome)


def test_measure_gives_wilson_for_shares_bootstrap_for_means_none_for_aggregates():
    share = measure(Metric("deal", interval="wilson"), [{"deal": True}, {"deal": False}, {"deal": True}, {}])
    assert share.value == pytest.approx(2 / 3) and share.n == 3 and share.ci == pytest.approx(wilson_interval(2, 3))
    mean = measure(Metric("turns", "lower", "bootstrap"), [{"turns": 2}, {"turns": 4}])
    assert mean.value == 3.0 and mean.ci is not None and 2.0 <= mean.ci[0] <= mean.ci[1] <= 4.0
    agg = measure(Metric("total", interval="none", aggregate=lambda ms: sum(m["x"] for m in ms)), [{"x": 1}, {"x": 2}])
    assert agg.value == 3.0 and agg.ci is None and agg.to_dict()["direction"] == "higher"
    assert measure(Metric("deal"), []).value is None


def test_matchup_metrics_use_the_games_own_metrics_per_matchup():
    recs = [_rec(0, ("a", "b"), deal=True, aborted=False, turns=3, n_invalid_total=1),
            _rec(1, ("b", "a"), deal=False, aborted=True, turns=5, n_invalid_total=0),
            _rec(2, ("a", "a"), deal=True, aborted=False, turns=2, n_invalid_total=0),
            _rec(3, ("a", "b"), status="failed")]
    out = matchup_metrics(recs, "deal_or_no_deal")  # an alias: the same game's metrics
    assert set(out) == {"a vs b", "a vs a"}
    ab = out["a vs b"]
    assert ab.episodes == 2 and ab.values["agreement_rate"].value == 0.5
    assert ab.values["abort_rate"].value == 0.5 and ab.values["abort_rate"].metric.direction == "lower"
    assert ab.values["dialogue_turns"].value == 4.0 and ab.values["pareto_rate"].value == 0.5
    assert ab.values["invalid_output_rate"].value == pytest.approx(1 / 9)  # 1 rejected of 1 + 8 outputs
    assert ab.reward_by_agent == {"a": 0.5, "b": 0.5}  # each sat once in the winning seat
    assert ab.to_dict()["metrics"]["agreement_rate"]["ci"] == pytest.approx(list(wilson_interval(1, 2)))


def test_matchup_results_give_each_sides_win_rate_and_ratings_their_intervals():
    """The typed results stats.json is written from: agent_b's win rate mirrors agent_a's, the
    rating table becomes values with intervals (None for an agent without games)."""
    from sparring.analysis.measures import WIN_RATE, rating_values
    from sparring.analysis.metrics import matchup_results, rating_table

    recs = [_rec(0, ("a", "b")), _rec(1, ("b", "a")), _rec(2, ("a", "b"))]  # Player_1 always wins
    [m] = matchup_results(recs)
    assert (m.agent_a, m.agent_b, m.games, m.a_wins, m.b_wins) == ("a", "b", 3, 2, 1)
    assert m.win_rate.value == pytest.approx(2 / 3) and m.win_rate.ci == pytest.approx(wilson_interval(2, 3))
    b = m.win_rate_of("b")
    assert b.metric is WIN_RATE and b.value == pytest.approx(1 / 3) and b.n == 3
    assert b.ci == pytest.approx((1 - m.win_rate.ci[1], 1 - m.win_rate.ci[0]))
    assert m.to_dict()["a_win_rate_ci"] == list(m.win_rate.ci)
    with pytest.raises(KeyError):
        m.win_rate_of("c")
    from sparring.analysis.metrics import comparisons

    values = rating_values(rating_table(comparisons(recs), ["a", "b", "c"], n_bootstrap=50, seed=0))
    assert values["a"].value > values["b"].value and values["a"].n == 3 and values["a"].ci is not None
    assert values["c"].value is None and values["c"].ci is None and values["c"].n == 0
