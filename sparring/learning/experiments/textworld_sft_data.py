"""Experiment: how TextWorld's held-out score grows with the number of gold games trained on —
`textworld-sft`'s recipe, settings and held-out games, one seed, one epoch on the first n training
games' rows for each n (nested sets)."""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments.textworld_sft import (
    SIZES,
    base_stage,
    finish,
    gold_rows,
    sft,
    trained_stage,
)
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment

DATA_SIZES: dict[str, dict[str, Any]] = {
    "quick": {**SIZES["quick"], "games": [1, 2], "seed": 0},
    "full": {**SIZES["full"], "train": 96, "games": [24, 96], "seed": 0},
}


@experiment("textworld-sft-data")
def run_data(ctx: Context) -> Experiment:
    """How the held-out score grows with the number of gold games: one seed, one epoch on the first
    n of the training games' rows for each n (nested sets), the same held-out games and settings as
    `textworld-sft`. A stage's step is its number of games (one row a step)."""
    size = DATA_SIZES[ctx.size]
    start = time.perf_counter()
    gold, rows = gold_rows(ctx, size, "textworld-data-gold", by_instance=True)
    exp, base_scores, base_played = base_stage(
        ctx, "textworld-sft-data", "TextWorld cooking: the held-out score against the number of gold games "
        f"trained on ({', '.join(map(str, size['games']))}; one epoch each, seed {size['seed']}).", gold, rows, size,
        "textworld-data-base")
    train_s, trained_steps = 0.0, 0
    for n in size["games"]:
        subset = rows[:n]
        result, seconds = sft(ctx, subset, size, size["seed"], len(subset), f"textworld-sft-g{n}")
        train_s, trained_steps = train_s + seconds, trained_steps + result.steps
        trained_stage(ctx, exp, result, seconds, f"textworld-sft-g{n}", len(subset), size["seed"], size,
                       base_scores)
    return finish(ctx, exp, base_played, size, rows, trained_steps, train_s, start)
