"""Experiment: TextWorld cooking (one room) with per-step credit from the game's own score.

`textworld-easy-rl` credited every token of a game with its group-relative episode reward: a
wrong appliance, the one command that spoils the meal, was rewarded like every other command of
its game, and after 10 steps more unwon games had cooked with the wrong appliance (13 -> 21). Here
each command is credited with what followed it: TextWorld reports a step reward (the score's
change, the failure penalty charged to the command that spoiled the meal), and GRPO's
`credit: turn` gives each turn its return-to-go, measured against the group's turns at the same
turn number (`turn_baseline: turn_index`: the k-th commands of the group's games of one world;
against one mean over all turns, the early commands of a game that scores as it goes always gain
and the last, decisive ones always lose). Each game is still trained as one sequence (its prompts
extend): every token carries its own turn's advantage.

1. start: `textworld-easy-rl`'s SFT start (its adapter when that experiment ran into the same
   output; otherwise trained here by the same recipe and seed);
2. GRPO on sparring's trainer from it, `textworld-easy-rl`'s settings but per-step credit and
   more steps (`SIZES`);
3. the start and the trained policy play the same held-out dev-fold games greedily (ids checked
   disjoint from the gold games and every RL training game): success, score, invalid commands,
   games lost to the wrong appliance, paired differences against the start, what each policy did
   (endings, commands by verb, invalid commands), the RL curves per step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sparring.learning.arms import run_arm
from sparring.learning.context import Context, Played
from sparring.learning.credit_report import credit_by_action
from sparring.learning.experiments import textworld_easy_rl as easy
from sparring.learning.experiments.textworld_rl import COOK, arm_config, recipe_appliances
from sparring.learning.experiments.textworld_sft import gold_rows, sft
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training
from sparring.learning.results import Experiment, Stage, rate
from sparring.records.reader import iter_records
from sparring.train.online.trainer.run import ROLLOUTS

NAME = "textworld-turn-rl"
START = f"{easy.NAME}-start"  # the start adapter's stage name, shared with textworld-easy-rl
ARM = ("grpo-turn", {"trainer": "sparring", "credit": "turn", "turn_baseline": "turn_index", "gamma": 1.0,
                     "baseline": "group", "gradient_checkpointing": False, "save_steps": 1})
# textworld-easy-rl's sizes; full: 14 steps instead of 10 (measured alone: a step ~1.9 min, the SFT
# start 4 min when not reused, each held-out evaluation 2.4 min; 35.6 min in all)
SIZES: dict[str, dict[str, Any]] = {"quick": dict(easy.SIZES["quick"]), "full": {**easy.SIZES["full"], "grpo_steps": 14}}


# the per-step credit designs compared on an arm's own training games (`credit_by_command` in its stage)
CREDIT_DESIGNS = {"turn_index, gamma 1": ("turn_index", 1.0), "progress, gamma 0.9": ("progress", 0.9),
                  "state, gamma 0.9": ("state", 0.9)}


def command_labels(record: Any) -> list[str]:
    """Each command of a TextWorld game by its first two words, `(refused)` when the game did not
    accept it: `take knife` is the same tokens whether the knife can be taken or not."""
    return [" ".join(e.content.split()[:2]) + ("" if e.meta.get("valid") else " (refused)")
            for e in record.events if e.tag == "command"]


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_from(ctx, NAME, SIZES[ctx.size], START)


def cooking_labels(record: Any) -> list[str]:
    """Each command of a TextWorld game: a cooking command named by its appliance and whether the
    recipe (as the game showed it) asks for that appliance, every other command `other`: what each
    appliance was paid, right and wrong, whatever the ingredient."""
    wanted = recipe_appliances(record)
    labels = []
    for e in record.events:
        if e.tag != "command":
            continue
        m = COOK.match(e.content.strip().lower())
        if not m:
            labels.append("other")
        elif not e.meta.get("valid"):
            labels.append(f"cook in {m.group(2)}, refused")
        else:
            right = m.group(2) in wanted.get(m.group(1).strip(), set())
            labels.append(f"cook in {m.group(2)}, " + ("the recipe's" if right else "not the recipe's"))
    return labels


def sft_start(ctx: Context, name: str, size: dict[str, Any],
              start_stage: str) -> tuple[Played, list[dict[str, Any]], str, str, float, float | None]:
    """The gold games of `size["train"]` training worlds (played again: cheap, and their ids are the
    start's training instances) and the SFT start `start_stage`: its adapter reused when registered,
    else fitted on those games. (gold, rows, adapter, alias, fit seconds (0: reused), fit loss)."""
    gold, rows = gold_rows(ctx, size, f"{name}-gold")
    alias, sft_s, loss = f"{ctx.label}@{start_stage}", 0.0, None
    if alias in ctx.adapters:
        start = ctx.adapters[alias]
    else:
        result, sft_s = sft(ctx, rows, size, 0, size["steps"], start_stage)
        start, alias, loss = str(result.adapter), ctx.register(start_stage, result.adapter), result.loss
    return gold, rows, start, alias, sft_s, loss


def run_from(ctx: Context, name: str, size: dict[str, Any], start_stage: str,
             arm_spec: tuple[str, dict[str, Any]] = ARM,
             rl_worlds: Callable[[Sequence[Any], int], list[int]] | None = None) -> Experiment:
    """The experiment `name`: the SFT start `start_stage` (reused when registered, else fitted on
    `size["train"]` gold games), per-step GRPO (`arm_spec`: its name and online settings) from it,
    both measured on the same held-out games. RL trains on the first `size["rl_games"]` worlds of
    the training fold, or on the seeds `rl_worlds(gold records, size["rl_games"])` picks from the
    gold games' worlds."""
    begin = time.perf_counter()
    gold, rows, start, alias, sft_s, loss = sft_start(ctx, name, size, start_stage)
    start_m = easy.measure(ctx, alias, f"{name}-start", size)
    origin = "textworld-easy-rl's SFT start" if start_stage == START else f"an SFT start on {size['train']} gold games"
    against = {"turn_index": "the group's commands at the same turn number",
               "progress": "the group's commands made at the same score", "group": "every command of the group",
               "state": "the group's commands played from the same game state"}
    exp = Experiment(name=name, description="TextWorld cooking in one-room, one-ingredient worlds: GRPO with per-step "
                     f"credit (each command's return-to-go from the game's score, gamma {arm_spec[1]['gamma']:g}, "
                     f"against {against[arm_spec[1]['turn_baseline']]}) from {origin}; the start and the trained "
                     "policy play the same held-out dev-fold games greedily.", model=ctx.label, primary="success",
                     training_ids=sorted({r.instance_id for r in gold.records}), heldout_ids=start_m.instances,
                     target="paired success over the SFT start with its interval above 0; fewer games lost to the "
                            "wrong appliance")
    exp.stages.append(Stage("sft-start", 0, start_m.metrics, {"gold_demos": gold.seconds, "train": sft_s,
                                                              **start_m.walls},
                            info={"adapter": start, "reused": not sft_s, "rows": len(rows), "loss": loss,
                                  **start_m.info}))
    ctx.progress(exp)
    arm, extra = arm_spec
    run_name = f"{name}-{arm}"
    rl_size = {**size, "max_live": size["episodes"]}  # a step's games all in flight
    settings = easy.arm_settings(ctx, rl_size, extra)
    if rl_worlds is not None:
        seeds = rl_worlds(gold.records, size["rl_games"])
        settings["experiment"]["dataset"].update(limit=len(seeds))
        settings["experiment"]["dataset"]["args"]["seeds"] = seeds
    trained = run_arm(ctx, exp, run_name, arm_config(ctx, rl_size, start, "grpo", settings),
                      partial(easy.measure, ctx, run=run_name, size=size), stage=arm, step=size["grpo_steps"],
                      start=start_m, curve_keys=("step", *easy.CURVE_KEYS),
                      info={"algorithm": "grpo", "settings": {k: v for k, v in settings.items() if k != "experiment"},
                            "episodes_per_step": size["generations"] * size["prompts"]})
    rollouts = trained.out / ROLLOUTS
    if (rollouts / "episodes.jsonl").exists():  # what each credit design gave each command of the training games
        exp.stages[-1].info["credit_by_command"] = credit_by_action(
            list(iter_records(rollouts)), size["generations"], "player", command_labels, CREDIT_DESIGNS,
            format_penalty=settings.get("format_penalty", 0.0))
        trained_design = {k: v for k, v in CREDIT_DESIGNS.items() if v == (extra["turn_baseline"], extra["gamma"])}
        exp.stages[-1].info["credit_by_appliance"] = credit_by_action(  # the sum of a label = n x mean
            list(iter_records(rollouts)), size["generations"], "player", cooking_labels, trained_design or
            {"as trained": (extra["turn_baseline"], extra["gamma"])}, top=20,
            format_penalty=settings.get("format_penalty", 0.0))
    curves = trained.curves(("step", *easy.CURVE_KEYS))
    plot_training({arm: curves}, ctx.out / "curves" / f"{name}-training.png", easy.TRAINING_PANELS)
    gold_won = rate([bool(r.outcome and r.outcome.metrics["success"]) for r in gold.records]).value
    exp.notes.append(f"start: {'reused' if not sft_s else 'trained'} ({len(rows)} SFT rows from {len(gold.records)} "
                     f"gold games, gold success {gold_won:.2f}); RL on {size['rl_games']} training games, "
                     f"{size['generations'] * size['prompts']} games a step, {size['grpo_steps']} steps, lr "
                     f"{size['lr']:g}, beta {size['beta']:g}, credit: {extra['credit']}, turn_baseline: "
                     f"{extra['turn_baseline']}, gamma {extra['gamma']:g}; training games' reward: failure penalty "
                     f"{size['failure_penalty']:g}, refused-command penalty {size.get('invalid_penalty', 0.0):g}; "
                     "mean reward per "
                     "step: " + ", ".join("n/a" if v is None else f"{v:.2f}" for v in curves["reward"]))
    exp.notes.append("held-out success / score: " + ", ".join(
        f"{s.name} {s.metrics['success'].value:.2f} / {s.metrics['score'].value:.2f}" for s in exp.stages))
    exp.wall_s = time.perf_counter() - begin
    return exp
