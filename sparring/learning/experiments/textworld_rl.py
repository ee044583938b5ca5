"""Experiment: TextWorld cooking, RL after SFT — PPO with per-step rewards, episode-reward GRPO and
expert iteration, each from the same SFT adapter, against that start on held-out games.

The start is the TextWorld SFT adapter (`textworld-sft`'s recipe: LoRA SFT on the gold
demonstrations of 48 training games; reused when an earlier run of the suite in the same output
folder registered `LABEL@textworld-sft-s0`). With the same game settings as the SFT experiment
(3 rooms, 2 ingredients, the full history, observations as TextWorld gives them), three arms train
on training-fold games only:

- `ppo`: PPO with a value head; each command's reward is its score increase (the game's step
  rewards), the outcome's rest on the last command; GAE over the learner's commands;
- `grpo`: GRPO with the episode's normalised score as every token's reward (groups of 4 episodes
  of one game);
- `expert-iteration`: the start plays the training games at T=0.7; SFT continues the start adapter
  on its own games that scored above the average (lm-selfplay's filter) — its wins among them.

Every policy plays the same 40 held-out dev-fold games greedily (ids checked disjoint from every
training game): success (Wilson), score and invalid-command rate, the paired per-game score
difference against the start, and the share of games lost after cooking an ingredient with an
appliance the recipe does not ask for (`appliance_errors`), before and after.
"""

from __future__ import annotations

import re
import time
from functools import partial
from typing import Any

from sparring.learning.arms import AS_MEASURED, Measured, run_arm
from sparring.learning.context import Context, Played
from sparring.learning.experiments.textworld_sft import GAME_ARGS, evaluate, gold_rows, sft
from sparring.learning.experiments.textworld_sft import SIZES as SFT_SIZES
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, paired, rate

SIZES: dict[str, dict[str, Any]] = {
    # quick: a pipeline check on the tiny model (one step of each arm, one-room worlds)
    "quick": {**SFT_SIZES["quick"], "rl_games": 2, "ppo_steps": 1, "grpo_steps": 1, "episodes": 2, "ei_games": 2,
              "ei_steps": 1, "tokens": 8},
    # full: each arm well under 60 min here (two threads, alone): a PPO step plays 8 games of up to 24
    # commands (~80 s with the learner's prefix cache; histories ~1.4k tokens) and trains on them (~235 s:
    # two scoring passes and one training pass over 8 whole games), ~5.2 min a step measured. GRPO and
    # expert iteration are cut further (4 steps; 32 games, 16 SFT steps) to fit one working session
    "full": {**SFT_SIZES["full"], "rl_games": 32, "ppo_steps": 6, "grpo_steps": 4, "episodes": 8,
             "ei_games": 32, "ei_steps": 16, "tokens": 12},
}
# What TextWorldExpress's CookingWorld cooks with (its gold agent: `cook X in <appliance>`): fry on the
# stove, roast in the oven, grill on the barbeque in the backyard (worlds of 3 rooms or more) or in
# the toaster (smaller worlds)
APPLIANCES = {"roast": {"oven"}, "fry": {"stove"}, "grill": {"barbeque", "toaster"}}
COOK = re.compile(r"cook (.+?) in (?:the )?(oven|stove|toaster|barbeque)\b")


def recipe_appliances(record: Any) -> dict[str, set[str]]:
    """The appliances the recipe (as the game showed it) asks for, by ingredient."""
    recipe = next((e.content for e in record.events if "Directions:" in e.content), "")
    return {item.strip(): APPLIANCES[verb] for verb, item in re.findall(r"(roast|fry|grill) the ([a-z ]+)", recipe.lower())}


def appliance_errors(records: list[Any]) -> list[bool]:
    """Per game: lost after cooking an ingredient with an appliance that the recipe (as the game
    showed it) does not ask for (roast -> oven, fry -> stove, grill -> barbeque or toaster)."""
    flags = []
    for r in records:
        flags.append(False)
        if r.outcome and r.outcome.metrics.get("success"):
            continue
        wanted = recipe_appliances(r)
        for e in r.events:
            m = COOK.match(e.content.strip().lower()) if e.tag == "command" else None
            if m and m.group(1).strip() in wanted and m.group(2) not in wanted[m.group(1).strip()]:
                flags[-1] = True
                break
    return flags


def game_config(ctx: Context, size: dict[str, Any], split: str, n: int, temperature: float) -> dict[str, Any]:
    return {"game": "textworld_cooking", "view": "rendered", "game_args": {**GAME_ARGS, "max_steps": size["max_steps"]},
            "dataset": {"name": "cookingworld", "split": split, "limit": n, "args": {"params": size["params"]}},
            "models_file": str(ctx.models_file.resolve()),
            "agents": {"cook": {"role": "player", "model": "learner",
                                "sampling": {"temperature": temperature, "max_new_tokens": size["tokens"],
                                             "stop": ["\n"]}}},
            "tournament": {"type": "self_play", "participants": ["cook"]},
            "run": {"seed": 0, "max_live": size.get("max_live", 8)}}


def arm_config(ctx: Context, size: dict[str, Any], start: str, algorithm: str,
               settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The online config of a TextWorld arm from the start adapter (for `arms.run_arm`);
    `settings`: online-config keys that replace these defaults (e.g. `trainer`, `learning_rate`)."""
    steps = size["ppo_steps" if algorithm == "ppo" else "grpo_steps"]
    data: dict[str, Any] = {
        "algorithm": algorithm, "model": ctx.model, "adapter": start,
        "learner_agent": "cook", "experiment": game_config(ctx, size, "train", size["rl_games"], 1.0),
        "max_steps": steps, "learning_rate": 2e-5 if algorithm == "grpo" else 1e-5, "save_steps": 4, "seed": 0,
        "sequences_per_episode": 1, "gradient_checkpointing": False, **AS_MEASURED}
    if algorithm == "ppo":
        data.update(num_generations=1, prompts_per_step=size["episodes"],
                    ppo={"ppo_epochs": 1, "minibatch_size": 2, "kl_coef": 0.05, "lam": 0.95})
    else:  # the full history makes every command one extending sequence: one slot per episode
        # TRL trains the step's 8 whole games in one pass: without recomputing activations that
        # went past 24 GB (killed by the OOM killer); PPO's minibatches of 2 games do not need it
        data.update(num_generations=4, prompts_per_step=max(1, size["episodes"] // 4), beta=0.0,
                    gradient_checkpointing=True)
    data.update(settings or {})
    return data


def _expert_iteration(ctx: Context, size: dict[str, Any], start: str, start_alias: str) -> tuple[Any, float, Played]:
    """The start's own training games at T=0.7; SFT (continuing the start) on the above-average ones."""
    from sparring.learning.experiments.textworld_sft import episode_rows
    from sparring.train.export import ExportFilters
    from sparring.train.export.filters import select

    cfg = game_config(ctx, size, "train", size["ei_games"], 0.7)
    cfg["agents"]["cook"]["model"] = start_alias
    played = ctx.play(cfg, "textworld-ei-play")
    kept = [rec for rec, _ in select(played.records, ExportFilters(agent="cook", keep="above_avg"))]
    rows = episode_rows(kept)
    if not rows:
        rows = episode_rows(played.records)  # every game scored alike (the quick suite): keep the pipeline going
    t = time.perf_counter()
    result, _ = sft(ctx, rows, size, 0, min(size["ei_steps"], len(rows)), "textworld-expert-iteration", start)
    return result, time.perf_counter() - t, played


def _measure(ctx: Context, alias: str, run: str, size: dict[str, Any]) -> Measured:
    """The held-out games (run `run`): metrics with the wrong-appliance losses, per-game score."""
    m, scores, played = evaluate(ctx, alias, run, size["heldout"], size)
    m = {**m, "lost_to_wrong_appliance": rate(appliance_errors(played.records))}
    return Measured(m, {"score": scores}, played.walls("heldout"), sorted(scores))


@experiment("textworld-rl")
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    gold, rows = gold_rows(ctx, size, "textworld-rl-gold")
    reused = ctx.adapters.get(f"{ctx.label}@textworld-sft-s0")
    t = time.perf_counter()
    if reused:
        start, sft_info = reused, {"reused": reused}
    else:
        result, _ = sft(ctx, rows, size, 0, size["steps"], "textworld-rl-start")
        start, sft_info = str(result.adapter), {"rows": result.rows, "loss": result.loss}
    sft_s = time.perf_counter() - t
    start_alias = ctx.register("textworld-rl-start", start)
    start_m = _measure(ctx, start_alias, "textworld-rl-start", size)
    exp = Experiment(name="textworld-rl", description="TextWorld cooking after SFT: PPO with per-step rewards, "
                     "episode-reward GRPO and expert iteration from the same SFT adapter; held-out dev-fold games "
                     "played greedily.", model=ctx.label, primary="success",
                     training_ids=sorted({r.instance_id for r in gold.records}), heldout_ids=start_m.instances,
                     target="success above the SFT start with the paired interval above 0 in at least one arm; "
                            "reported whatever the result")
    exp.stages.append(Stage("sft-start", 0, start_m.metrics, {"train": sft_s, **start_m.walls}, info=sft_info))
    ctx.progress(exp)
    for algorithm in ("ppo", "grpo"):
        run_arm(ctx, exp, f"textworld-{algorithm}", arm_config(ctx, size, start, algorithm),
                partial(_measure, ctx, run=f"textworld-rl-{algorithm}", size=size),
                stage=algorithm, step=len(exp.stages), start=start_m, register_as=f"textworld-rl-{algorithm}",
                info={"steps": size[f"{algorithm}_steps"], "episodes_per_step": size["episodes"]})
    result, seconds, played = _expert_iteration(ctx, size, start, start_alias)
    exp.training_ids = sorted(set(exp.training_ids) | {r.instance_id for r in played.records})
    exp.__post_init__()
    ei = _measure(ctx, ctx.register("textworld-rl-ei", result.adapter), "textworld-rl-expert-iteration", size)
    exp.stages.append(Stage("expert-iteration", len(exp.stages), ei.metrics,
                            {"play": played.seconds, "train": seconds, **ei.walls},
                            info={"rows": result.rows, "loss": result.loss, "games": len(played.records)}))
    exp.paired["score expert-iteration - start"] = paired(start_m.per["score"], ei.per["score"])
    exp.notes.append(f"start: {'the registered textworld-sft-s0 adapter' if reused else 'SFT on the gold games'}; "
                     f"PPO {size['ppo_steps']} steps and GRPO {size['grpo_steps']} steps of {size['episodes']} "
                     f"episodes on {size['rl_games']} training games (the cut that keeps each arm within the "
                     "budget); expert iteration on the above-average of "
                     f"{size['ei_games']} games, {size['ei_steps']} SFT steps at most")
    exp.wall_s = time.perf_counter() - begin
    return exp
