"""clemscore math on hand-built numbers: % played, quality of played episodes, game score, the
bootstrap over episodes within games, and the per-game quality definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sparring.evaluation.clemscore import clemscore, episode_quality, fmt, game_score, quality_fn
from sparring.gameapi.game import Outcome
from sparring.records.record import EpisodeRecord, SeatRecord


def test_game_score_counts_played_and_quality_of_played_only():
    s = game_score([100.0, 50.0, None, 0.0], failed=1)
    assert (s.episodes, s.played, s.failed) == (4, 3, 1)
    assert s.pct_played == pytest.approx(75.0)
    assert s.quality == pytest.approx(50.0)  # mean of 100, 50, 0 (the aborted one is not averaged)
    assert s.score == pytest.approx(37.5)    # 75 % played x 50 quality / 100
    lo, hi = s.pct_played_ci
    assert 0 < lo < 75 < hi <= 100
    assert s.quality_ci[0] <= 50 <= s.quality_ci[1]


def test_game_score_without_played_episodes():
    s = game_score([None, None])
    assert s.pct_played == 0.0 and math.isnan(s.quality) and s.score == 0.0
    empty = game_score([])
    assert empty.episodes == 0 and math.isnan(empty.score)


def test_clemscore_is_mean_over_games_of_played_times_quality():
    # game 1: 50 % played, quality 100 -> 50; game 2: 100 % played, quality 20 -> 20
    point, (lo, hi) = clemscore([[100.0, None], [20.0, 20.0]], n_boot=2000)
    assert point == pytest.approx(35.0)
    assert lo <= point <= hi
    # the bootstrap resamples within games: game 2 is constant, game 1 gives 0, 50 or 100
    assert lo >= (0 + 20) / 2 - 1e-9 and hi <= (100 + 20) / 2 + 1e-9


def test_clemscore_constant_games_have_a_degenerate_interval_and_skip_empty_games():
    point, ci = clemscore([[40.0, 40.0, 40.0], [], [80.0]])
    assert point == pytest.approx(60.0) and ci == pytest.approx((60.0, 60.0))
    assert math.isnan(clemscore([])[0])


def test_clemscore_bootstrap_matches_a_direct_numpy_resampling():
    games = [[100.0, 0.0, None, 50.0], [10.0, 30.0]]
    point, ci = clemscore(games, seed=3, n_boot=500)
    rng = np.random.default_rng(3)
    arrays = [np.array([0.0 if q is None else q for q in g]) for g in games]
    boots = np.mean([a[rng.integers(0, a.size, size=(500, a.size))].mean(axis=1) for a in arrays], axis=0)
    assert point == pytest.approx((37.5 + 20.0) / 2)
    assert ci == pytest.approx(tuple(np.quantile(boots, [0.025, 0.975])))
    assert clemscore(games, seed=3, n_boot=500) == (point, ci)  # deterministic per seed


def test_quality_definitions_of_games_without_a_quality_score():
    """Each game declares its quality in its own folder (`Game.hooks.quality`); aliases resolve."""
    dond_quality, debate_quality = quality_fn("dond"), quality_fn("debate")
    textworld_quality = quality_fn("textworld_cooking")
    assert dond_quality is not None and debate_quality is not None and textworld_quality is not None
    assert quality_fn("deal_or_no_deal") is dond_quality and quality_fn("wordle") is None
    deal = {"deal": True, "points": {"A": 6, "B": 4}, "ceilings": {"max_points": {"A": 10, "B": 8}}}
    assert dond_quality(deal) == pytest.approx(100 * (0.6 + 0.5) / 2)
    assert dond_quality({"deal": False, "points": {"A": 0, "B": 0}}) == 0.0
    assert debate_quality({"p_correct": 0.7}) == pytest.approx(70.0)
    assert debate_quality({}) is None
    assert textworld_quality({"score": 0.25}) == pytest.approx(25.0)


def _record(game: str, status: str = "complete", outcome_status: str = "complete", **metrics) -> EpisodeRecord:
    return EpisodeRecord(id="x", experiment="e", game=game, instance_id="i", seed=0, status=status,
                         seats={"A": SeatRecord(agent="a", model="m", role="r")},
                         outcome=Outcome(status=outcome_status, metrics=metrics))


def test_episode_quality_prefers_the_games_quality_score_and_drops_aborted_episodes():
    assert episode_quality(_record("taboo", quality_score=50.0, played=True)) == 50.0
    assert episode_quality(_record("dond", quality_score=12.0, deal=False)) == 12.0  # the game's own wins
    assert episode_quality(_record("wordle", "aborted", "aborted", quality_score=0.0, aborted=True)) is None
    assert episode_quality(_record("taboo", quality_score=0.0, played=False)) is None
    assert episode_quality(_record("textworld_cooking", score=1.0)) == 100.0
    assert episode_quality(_record("some_game_without_quality", reward=1.0)) is None
    assert episode_quality(_record("taboo", quality_score=250.0)) == 100.0  # clamped to 0-100


def test_fmt():
    assert fmt(52.345, [40.0, 63.04]) == "52.3 [40.0, 63.0]"
    assert fmt(float("nan")) == "-" and fmt(None) == "-"
