"""Wordle's hooks: headline metrics (its quality is the outcomes' own `quality_score`)."""

from __future__ import annotations

from sparring.gameapi.hooks import GameHooks, Metric

HOOKS = GameHooks(metrics=(
    Metric("success", "higher", "wilson", "the word was found"),
    Metric("n_guesses", "lower", "bootstrap", "guesses per game"),
    Metric("quality_score", "higher", "bootstrap", "100 / n for a success at attempt n, else 0"),
))
