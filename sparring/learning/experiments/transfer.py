"""Experiment 5: transfer and forgetting (Playpen's three-way evaluation). Every adapter the suite
trained (registered as `MODEL@STAGE` in OUTPUT/models.yaml, so `sparring bench MODEL@STAGE
--models-file OUTPUT/models.yaml` plays it like any model) and the base model play the bench
suite (`bench-quickstart`, the same instances for every model); per adapter: its per-game scores
on the games it did NOT train on, their mean (clemscore-style, 0-100) and the paired per-game
difference against the base model. The trained game's held-out gain is in its own experiment.

Beside the games, the statscore (Playpen's second number: general ability on static tasks, run by
lm-evaluation-harness; `sparring.evaluation.statscore`): the quickstart suite's local task set,
before (base) and after (each adapter) on the same documents, with the paired per-document
difference and its bootstrap interval, so a recipe that costs general ability shows it. Without
lm-eval installed the statscore rows are left out and a note says so.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.learning.context import Context
from sparring.learning.registry import experiment
from sparring.learning.results import Estimate, Experiment, Stage, paired

TRAINED_ON = {"textworld-sft": "textworld_cooking", "textworld-rl": "textworld_cooking", "dond": "dond", "grpo": "dond",
              "debate": "debate",
              "tictactoe": "textarena"}
SIZES: dict[str, dict[str, Any]] = {
    "quick": {"instances": 1, "games": ["taboo", "wordle", "dond"], "adapters": 1},  # a pipeline check
    "full": {"instances": None, "games": None, "adapters": None},
}


def trained_game(alias: str) -> str | None:
    stage = alias.split("@", 1)[1]
    return next((g for prefix, g in TRAINED_ON.items() if stage.startswith(prefix)), None)


def finals(adapters: dict[str, str]) -> list[str]:
    """The last adapter of each training run: not intermediate chunks (`-cN`), not the DoND warm
    start, one TextWorld seed (s0), not the data-scaling points (`-gN`); iterations `-N` keep the highest."""
    by_run: dict[str, str] = {}
    for alias in adapters:
        stage = alias.split("@", 1)[1]
        if re.search(r"-[cg]\d+$", stage) or stage == "dond-warm" or re.search(r"-s[1-9]\d*$", stage):
            continue
        by_run[re.sub(r"-\d+$", "", stage)] = alias  # registered in order: the last iteration wins
    return list(by_run.values())


@experiment("transfer")
def run(ctx: Context) -> Experiment:
    from sparring.evaluation.bench import BenchOptions, run_bench

    size = SIZES[ctx.size]
    models = finals(ctx.adapters)[: size["adapters"]]
    if not models:
        raise SparringError("transfer: no trained adapter in this suite run (run the other experiments first)")
    start = time.perf_counter()
    out = ctx.out / "bench"
    result = run_bench(BenchOptions(models=[ctx.label, *models], suite="bench-quickstart", games=size["games"],
                                    instances=size["instances"], output_dir=str(out),
                                    models_file=str(ctx.models_file), quiet=True, report=False), ctx.console)
    data = json.loads((out / "bench.json").read_text()) if (out / "bench.json").is_file() else result.data
    games = data["games"]
    ids = [f"bench:{k}" for k in games]
    exp = Experiment(name="transfer", description="Transfer / forgetting: each trained adapter and the base "
                     "model on the bench-quickstart games (same instances); mean score over the games the "
                     "adapter did not train on; statscore (lm-eval static tasks) before/after, paired per document.", model=ctx.label, primary="other_games_score",
                     training_ids=[], heldout_ids=ids,
                     target="no loss on the games an adapter did not train on (interval of the change includes 0 or is above)")
    base_scores = _scores(games, ctx.label)
    exp.stages.append(Stage("base", 0, {"other_games_score": _mean(list(base_scores.values()))},
                            info={"per_game": base_scores}))
    for alias in models:
        game = trained_game(alias)
        scores = {g: v for g, v in _scores(games, alias).items() if g != game}
        base_other = {g: v for g, v in base_scores.items() if g != game}
        exp.stages.append(Stage(alias.split("@", 1)[1], 1, {"other_games_score": _mean(list(scores.values()))},
                                info={"per_game": scores, "trained_game": game,
                                      "base_on_same_games": _mean(list(base_other.values())).value}))
        exp.paired[f"other-game score {alias.split('@', 1)[1]} - base"] = paired(base_other, scores)
    _statscore(exp, data.get("statscore"), ctx.label, models)
    exp.notes.append(f"bench output: {out} (bench.json has every per-game score with its interval)")
    exp.wall_s = time.perf_counter() - start
    return exp


def _statscore(exp: Experiment, static: dict[str, Any] | None, base: str, models: list[str]) -> None:
    """Each stage's statscore and, per static task, the paired per-document change against the base."""
    from sparring.evaluation.statscore import read_items

    if not static or static.get("status") == "skipped":
        exp.notes.append((static or {}).get("note") or "statscore: the bench suite has no static tasks")
        return
    rows = static.get("models") or {}
    items = {m: read_items(Path(r["items_file"])) if r.get("items_file") else {} for m, r in rows.items()}
    for stage in exp.stages:
        model = base if stage.step == 0 else next((m for m in models if m.split("@", 1)[1] == stage.name), None)
        row = rows.get(model or "") or {}
        if row.get("status") not in ("ok", "incomplete") or math.isnan(float(row.get("statscore", math.nan))):
            continue
        n = sum(int(t.get("n") or 0) for t in (row.get("tasks") or {}).values() if t.get("status") == "ok")
        stage.metrics["statscore"] = Estimate(float(row["statscore"]), n, tuple(row["ci"]), "mean")
        stage.info["statscore_tasks"] = {k: t.get("score") for k, t in (row.get("tasks") or {}).items()}
    for alias in models:
        for task, before in items.get(base, {}).items():
            after = items.get(alias, {}).get(task)
            if after:
                exp.paired[f"statscore {task} {alias.split('@', 1)[1]} - base"] = paired(before, after)
    exp.notes.append("statscore: lm-eval on the bench suite's static tasks (0-100); paired = per-document "
                     "difference on the documents both models answered, with a bootstrap interval")


def _scores(games: dict[str, Any], model: str) -> dict[str, float]:
    out = {}
    for key, g in games.items():
        row = (g.get("models") or {}).get(model) or {}
        if row.get("score") is not None:
            out[key] = float(row["score"])
    return out


def _mean(values: list[float]) -> Estimate:
    from sparring.learning.results import mean

    return mean(values)
