"""Benchmark scores in the clembench style: per game % played and quality, per model the clemscore.

An episode is *played* when it finished without an abort (record status complete, outcome status
not aborted) and has a quality score; failed episodes (engine or model errors, replayable with
`--retry-failed`) are counted apart and are not part of any rate. Quality (0-100) is
`Outcome.metrics["quality_score"]` when the game reports one (taboo, wordle, wordle_withcritic:
100 / n for a success at attempt n, else 0); the games that do not declare their quality function
in their folder (`Game.hooks.quality`). Quality is an episode-level score of whoever sat at the table:
in self-play it is the model's; against a partner it is the pairing's, as in clembench.

    game score  = % played x mean quality of played episodes / 100   (= mean over all episodes of
                  the quality, counting a not-played episode as 0)
    clemscore   = mean of the game scores over the games of the suite that produced episodes (the
                  others are reported as missing, not counted as 0)

Confidence intervals are 95% percentile bootstraps (numpy, seeded): episodes are resampled within
each game, independently per game, and the whole statistic is recomputed per resample; % played
uses Wilson intervals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparring.records.record import EpisodeRecord
from sparring.stats.stats_tests import bootstrap_ci, wilson_interval

N_BOOT = 1000


def quality_fn(game: str) -> Callable[[Any], float | None] | None:
    """The game's own quality function (`Game.hooks.quality`), None for an unknown game or one
    whose outcomes carry their own `quality_score`."""
    from sparring.gameapi import GAMES

    return GAMES.get(game).hooks.quality if game in GAMES else None


def episode_quality(rec: EpisodeRecord) -> float | None:
    """Quality (0-100) of a stored episode, None when it was not played (aborted, unscorable)."""
    if rec.status != "complete" or rec.outcome is None or rec.outcome.status == "aborted":
        return None
    m = rec.outcome.metrics or {}
    if m.get("aborted") or m.get("played") is False:
        return None
    if m.get("quality_score") is not None:
        q = float(m["quality_score"])
    else:
        fn = quality_fn(rec.game)
        if fn is None:
            return None
        value = fn(m)
        if value is None:
            return None
        q = float(value)
    return min(100.0, max(0.0, q))


def has_quality(game: str) -> bool:
    """Whether `game` can be scored without a `quality_score` in its outcomes."""
    return quality_fn(game) is not None


@dataclass
class GameScore:
    """One (model, game): counts, % played, quality of played episodes, game score, with CIs."""

    episodes: int
    played: int
    failed: int
    pct_played: float
    pct_played_ci: tuple[float, float]
    quality: float
    quality_ci: tuple[float, float]
    score: float
    score_ci: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def game_score(qualities: Sequence[float | None], failed: int = 0, seed: int = 0,
               n_boot: int = N_BOOT) -> GameScore:
    """Scores of one game from the per-episode qualities (None = not played)."""
    n = len(qualities)
    played = [float(q) for q in qualities if q is not None]
    k = len(played)
    lo, hi = wilson_interval(k, n) if n else (math.nan, math.nan)
    quality = float(np.mean(played)) if played else math.nan
    score_vals = [q if q is not None else 0.0 for q in qualities]
    return GameScore(
        episodes=n, played=k, failed=failed,
        pct_played=100.0 * k / n if n else math.nan, pct_played_ci=(100.0 * lo, 100.0 * hi),
        quality=quality, quality_ci=bootstrap_ci(played, n_boot=n_boot, seed=seed),
        score=float(np.mean(score_vals)) if n else math.nan,
        score_ci=bootstrap_ci(score_vals, n_boot=n_boot, seed=seed))


def clemscore(games: Iterable[Sequence[float | None]], seed: int = 0, n_boot: int = N_BOOT,
              level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean over games of (% played x mean played quality / 100) and its bootstrap interval.

    Each element of `games` is one game's per-episode qualities (None = not played); games without
    episodes are left out. Resampling is within each game, so every resample keeps every game."""
    arrays = [np.array([0.0 if q is None else float(q) for q in g]) for g in games]
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return math.nan, (math.nan, math.nan)
    point = float(np.mean([a.mean() for a in arrays]))
    rng = np.random.default_rng(seed)
    boots = np.zeros(n_boot)
    for a in arrays:
        idx = rng.integers(0, a.size, size=(n_boot, a.size))
        boots += a[idx].mean(axis=1)
    boots /= len(arrays)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return point, (float(lo), float(hi))


def fmt(x: float | None, ci: Sequence[float] | None = None, digits: int = 1) -> str:
    """`52.3 [40.1, 63.0]`, or `-` for a missing value."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    text = f"{x:.{digits}f}"
    if ci is not None and len(ci) == 2 and not any(c is None or math.isnan(c) for c in ci):
        text += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return text


__all__ = ["GameScore", "clemscore", "episode_quality", "fmt", "game_score", "has_quality", "quality_fn"]
