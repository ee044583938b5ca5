"""Experiment: TextWorld cooking at a difficulty the SFT start sometimes wins, then online RL from it.

`textworld-rl` showed why RL could not improve TextWorld at 3 rooms / 2 ingredients: its SFT start
won 1 of 40 held-out games, so RL had almost no success to reinforce. Here the worlds are smaller
(`WORLD`: one room, one ingredient; gold paths 8-13 commands), picked with pilots so that the SFT
start wins 20-50% of held-out games: there is success to reinforce and room above it.

1. start: LoRA SFT on the gold games of the training fold (`textworld-sft`'s recipe: one
   multi-turn row per gold episode, the full history, observations as TextWorld gives them);
2. online RL from that adapter on training-fold games (`ARMS`: GRPO on sparring's trainer, groups
   of games of one instance; reward = the game's normalised score, 1 when the meal is eaten;
   every token of a game gets its group-relative reward: `credit: episode`);
3. the start and every trained policy play the same held-out dev-fold games greedily (ids checked
   disjoint from every training game): success (Wilson), score, invalid commands, the paired
   per-game success and score differences against the start (bootstrap 95% intervals), what the
   policies did (`behaviour`), and the RL curves per step (reward, KL, entropy, losses, cost) in
   the arm's stage info and OUT/curves/textworld-easy-rl-training.png.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from functools import partial
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.experiments.textworld_rl import (
    COOK,
    appliance_errors,
    arm_config,
    game_config,
    recipe_appliances,
)
from sparring.learning.experiments.textworld_sft import SIZES as SFT_SIZES
from sparring.learning.experiments.textworld_sft import evaluate, gold_rows, sft
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage, rate

NAME = "textworld-easy-rl"
WORLD = {"numLocations": 1, "numIngredients": 1, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0}
# Each arm: (name, algorithm, online-config keys over textworld_rl._online's defaults). GRPO on
# sparring's trainer: the group's shared prompt runs once, old log-probs come from the rollout
# (temperature 1), and a small KL term (beta) against the start adapter, whose reference pass
# is what makes the KL curve measurable; `lr` per size (LoRA: ~10x a full fine-tuning rate).
ARMS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("grpo", "grpo", {"trainer": "sparring", "credit": "episode", "baseline": "group", "gradient_checkpointing": False,
                      "save_steps": 1}),
)
SIZES: dict[str, dict[str, Any]] = {
    # quick: the pipeline end to end on the tiny model (one gold game's row, one RL step of 2 games)
    "quick": {**SFT_SIZES["quick"], "params": WORLD, "train": 2, "heldout": 3, "rl_games": 2, "grpo_steps": 1,
              "generations": 2, "prompts": 1, "episodes": 2, "tokens": 8, "lr": 1e-4, "beta": 0.01, "micro_batch": 2,
              "failure_penalty": 0.5},
    # full: see docs/learning/textworld-easy-rl.md for the pilots behind every number
    "full": {"train": 64, "heldout": 64, "max_steps": 20, "gold_max_steps": 30, "steps": 64, "max_length": 3072,
             "max_live": 32, "params": WORLD, "rl_games": 64, "grpo_steps": 10, "generations": 8, "prompts": 2, "episodes": 16,
             "tokens": 12, "lr": 2e-4, "beta": 0.01, "micro_batch": 2,
             "failure_penalty": 0.5},
}
CURVE_KEYS = ("reward", "kl", "entropy", "pg_loss", "vf_loss", "approx_kl", "clipfrac", "zero_advantage_groups",
              "advantage_abs", "game/success", "game/score", "game/invalid_rate", "trained_tokens",
              "cost/total_s", "cost/rollout_s", "cost/scoring_s", "cost/training_s")
VERB = re.compile(r"^(\w+)")


def behaviour(records: list[Any]) -> dict[str, Any]:
    """What a policy did in its held-out games, from the records: how games ended, commands by
    verb (valid ones), invalid commands, games that cooked, games lost to the wrong appliance."""
    ends: Counter[str] = Counter()
    verbs: Counter[str] = Counter()
    invalid: Counter[str] = Counter()
    cooked = 0
    for r in records:
        metrics = r.outcome.metrics if r.outcome else {}
        ends[str(metrics.get("end", "unfinished"))] += 1
        commands = [e for e in r.events if e.tag == "command"]
        cooked += any(e.content.startswith("cook ") and e.meta.get("valid") for e in commands)
        for e in commands:
            m = VERB.match(e.content.strip().lower())
            verb = m.group(1) if m else "(empty)"
            (verbs if e.meta.get("valid") else invalid)[verb] += 1
    wrong = appliance_errors(records)
    return {"ends": dict(ends), "valid_commands": dict(verbs.most_common()), "invalid_commands": dict(invalid.most_common(8)),
            "games_that_cooked": cooked, "lost_to_wrong_appliance": sum(wrong), "games": len(records),
            "first_cook": appliance_choice(records)}


def appliance_choice(records: list[Any]) -> dict[str, Any]:
    """Does the policy read the recipe when it cooks? Over the games whose recipe asks for cooking
    and that tried to cook: the first appliance tried, by the appliance the recipe asks for, and
    how many first tries matched it (a policy blind to the recipe matches about a third)."""
    table: Counter[str] = Counter()
    tried = matched = 0
    for r in records:
        wanted = set().union(*recipe_appliances(r).values())
        first = next((m.group(2) for e in r.events if e.tag == "command"
                      for m in [COOK.match(e.content.strip().lower())] if m), None)
        if not wanted or first is None:
            continue
        tried += 1
        matched += first in wanted
        table[f"{'/'.join(sorted(wanted))} -> {first}"] += 1
    return {"games": tried, "recipe_appliance": matched, "by_recipe": dict(sorted(table.items()))}


def measure(ctx: Context, alias: str, run: str, size: dict[str, Any]) -> Measured:
    """The held-out games with `alias` (run `run`): metrics, per-game success and score, behaviour."""
    m, scores, played = evaluate(ctx, alias, run, size["heldout"], size)
    success = {r.instance_id: float(bool(r.outcome.metrics["success"])) for r in played.records if r.outcome}
    m = {**m, "lost_to_wrong_appliance": rate(appliance_errors(played.records))}
    return Measured(m, {"success": success, "score": scores}, played.walls("heldout"), sorted(success),
                    {"behaviour": behaviour(played.records)})


TRAINING_PANELS = training_panels("score", {"game/success": "training games won"},
                                  shared=("kl", "entropy", "pg_loss", "vf_loss"))


def arm_settings(ctx: Context, size: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """The arm's online-config keys: this size's rates and groups, and the training games with the
    reward's failure penalty and, where the size sets one, its refused-command penalty (the held-out
    games keep the simulator's score as it is)."""
    games = game_config(ctx, size, "train", size["rl_games"], 1.0)
    games["game_args"]["failure_penalty"] = size["failure_penalty"]
    if size.get("invalid_penalty"):
        games["game_args"]["invalid_penalty"] = size["invalid_penalty"]
    return {"learning_rate": size["lr"], "beta": size["beta"], "num_generations": size["generations"],
            "prompts_per_step": size["prompts"], "micro_batch_size": size["micro_batch"], "experiment": games,
            **extra}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    gold, rows = gold_rows(ctx, size, f"{NAME}-gold")
    result, sft_s = sft(ctx, rows, size, 0, size["steps"], f"{NAME}-start")
    start, start_alias = str(result.adapter), ctx.register(f"{NAME}-start", result.adapter)
    start_m = measure(ctx, start_alias, f"{NAME}-start", size)
    gold_won = rate([bool(r.outcome and r.outcome.metrics["success"]) for r in gold.records]).value
    exp = Experiment(name=NAME, description="TextWorld cooking in one-room, one-ingredient worlds: LoRA SFT on gold "
                     "games (the start), then online RL from it on training games; the start and each trained "
                     "policy play the same held-out dev-fold games greedily.", model=ctx.label, primary="success",
                     training_ids=sorted({r.instance_id for r in gold.records}), heldout_ids=start_m.instances,
                     target="the SFT start wins 20-50% of held-out games; an RL arm wins more, paired success "
                            "interval above 0")
    exp.stages.append(Stage("sft-start", 0, start_m.metrics, {"gold_demos": gold.seconds, "train": sft_s, **start_m.walls},
                            info={"rows": result.rows, "loss": result.loss, "gold_success": gold_won, **start_m.info}))
    ctx.progress(exp)
    per_arm: dict[str, dict[str, list[Any]]] = {}
    for arm, algorithm, extra in ARMS:
        name = f"{NAME}-{arm}"
        rl_size = {**size, "max_live": size["episodes"]}  # a step's games all in flight
        settings = arm_settings(ctx, rl_size, extra)
        trained = run_arm(ctx, exp, name, arm_config(ctx, rl_size, start, algorithm, settings),
                          partial(measure, ctx, run=name, size=size),
                          stage=arm, step=size["ppo_steps" if algorithm == "ppo" else "grpo_steps"], start=start_m,
                          info={"algorithm": algorithm, "settings": {k: v for k, v in settings.items() if k != "experiment"},
                                "episodes_per_step": size["generations"] * size["prompts"]},
                          curve_keys=("step", *CURVE_KEYS))
        per_arm[arm] = trained.curves(("step", *CURVE_KEYS))
    if per_arm:
        plot_training(per_arm, ctx.out / "curves" / f"{NAME}-training.png", TRAINING_PANELS)
    exp.notes.append(f"{len(rows)} SFT rows from {len(gold.records)} gold games (gold success {gold_won:.2f}), "
                     f"{size['steps']} SFT steps; RL on {size['rl_games']} training games, "
                     f"{size['generations'] * size['prompts']} games a step ({size['prompts']} groups of "
                     f"{size['generations']}), lr {size['lr']:g}, beta {size['beta']:g}; held-out games played "
                     "greedily; mean reward per step of each arm: "
                     + "; ".join(f"{a}: " + ", ".join("n/a" if v is None else f"{v:.2f}" for v in c["reward"])
                                 for a, c in per_arm.items()))
    exp.notes.append("held-out success / score: " + ", ".join(
        f"{s.name} {s.metrics['success'].value:.2f} / {s.metrics['score'].value:.2f}" for s in exp.stages))
    exp.wall_s = time.perf_counter() - begin
    return exp
