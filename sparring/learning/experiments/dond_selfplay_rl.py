"""Experiment: Deal or No Deal self-play RL — both seats learn, from the self-play SFT policy of
`dond-selfplay`, with a running baseline per seat (SPIRAL's role-conditioned advantage estimation).

Self-play SFT (`dond-selfplay`) agrees with itself in ~0.9 of held-out games, but almost every deal
is one side taking the whole pool: in lm-selfplay's filtered SFT the side that claims everything
is kept and the side that gave in scores what walking away scores. Here the learner plays both
seats of every training game and learns in both, by GRPO on sparring's trainer with a running
mean reward per seat as each seat's baseline (`baseline: rae`: in self-play the two seats' rewards
differ systematically, so one mean over a group would credit the seat rather than the move; the
advantages are divided by the step's reward standard deviation, as `dond-rl`'s by its group's). Two
arms from the same start, differing only in the reward:

- `self`: each side's own points (lm-selfplay's semi-competitive game, the game every other DoND
  experiment plays);
- `lambda`: own points plus half the other side's (`objective: lambda`, lam 0.5): an integrative
  deal (both sides above half the pool's worth) pays the pair more than one side taking everything,
  though a capitulation still pays the side that gives in half the taker's points (the first run
  found that this entrenches capitulation: docs/learning/dond-selfplay.md). Its games state that
  score in the system prompt (the game's own objective sentence); it is measured in the standard game.

Every policy (the start, each arm) is measured in the standard game (`objective: self`) on two
held-out sets — the suite's generated test scenarios and lm-selfplay's own `selfplay.txt`
scenarios (their test split) — in self-play (deals where both score, each seat's points, the lower
side's points, Pareto rate, the split histogram) and against `fair-negotiator` in both seats (own
points); on the generated set also against the base model. Both held-out sets are test splits of
the scenario-level hash split every DoND source shares, so no held-out scenario is a training one
(ids checked in code as well).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.dond_eval import (
    FAIR,
    MAX_LIVE,
    contexts,
    contexts_file,
    dataset,
    game_args,
    measure,
    walls,
)
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"train": 4, "heldout": 2, "partner_heldout": 1, "steps": 1, "generations": 2, "prompts": 1,
              "max_errors": 2, "tokens": 16, "max_turns": 4},
    # full: 10 steps of 8 self-play games an arm (16 trained sides a step); each policy plays 32
    # held-out scenarios of each set in self-play and 16 x 2 seats against each fixed partner (an
    # evaluation of one policy took ~10 min here: three of them and two arms fit the hour)
    "full": {"train": 64, "heldout": 32, "partner_heldout": 16, "steps": 10, "generations": 4, "prompts": 2,
             "tokens": 32, "max_turns": 8},
}
LEARNING_RATE = 2e-4
START = "dond-selfplay-2"
# arm -> the game's reward in its training games (the measured game is always objective: self)
ARMS: dict[str, dict[str, Any]] = {"self": {"objective": "self"}, "lambda": {"objective": "lambda", "lam": 0.5}}
SETS = ("suite", "contexts")  # the generated test scenarios; lm-selfplay's selfplay.txt test split
TRAINING_PANELS = training_panels("reward (own points, + lam x the other's), -0.1 a refused reply",
                                  {"reward/Player_1": "reward as Player_1", "reward/Player_2": "reward as Player_2"})


def arm_config(ctx: Context, size: dict[str, Any], start: str, arm: str) -> dict[str, Any]:
    """GRPO on sparring's trainer: the learner in both seats of every game, both seats trained,
    a running baseline per seat; the game's reward under the arm's objective."""
    args = {**game_args(size), **ARMS[arm]}
    experiment = {"game": "dond", "view": "rendered", "game_args": args, "dataset": dataset("train", size["train"]),
                  "models_file": str(ctx.models_file.resolve()),
                  "agents": {"learner": {"role": "negotiator", "model": "learner",
                                         "sampling": {"temperature": 1.0, "max_new_tokens": size["tokens"]}}},
                  "tournament": {"type": "self_play", "participants": ["learner"]},
                  "run": {"seed": 0, "max_live": MAX_LIVE}}
    return {"algorithm": "grpo", "trainer": "sparring", "model": ctx.model, "adapter": start,
            "learner_agent": "learner", "experiment": experiment, "seats": [0, 1],
            # the running baselines start at 0 and move 5% a game (SPIRAL's decay); advantages are
            # divided by the step's reward std, as dond-rl's by its group's: points span 0-10 here
            "opponents": {"mode": "self_play"}, "baseline": "rae", "scale_rewards": "batch",
            "num_generations": size["generations"], "prompts_per_step": size["prompts"], "max_steps": size["steps"],
            "learning_rate": LEARNING_RATE, "beta": 0.0, "format_penalty": 0.1, "train_rejected": True,
            # the trainer's defaults (no dropout in the training passes, the adapter merged for the
            # rollout), not AS_MEASURED: no earlier page's figures to reproduce
            "save_steps": 4, "seed": 0, "lr_scheduler_type": "constant"}


def measure_policy(ctx: Context, alias: str, size: dict[str, Any], contexts_path: Path, *, name: str) -> Measured:
    """Both held-out sets in self-play and against `fair-negotiator`, the generated one also against
    the base model (its games, full of refused replies, cost the most); metrics and pairing labels
    of the second set prefixed `contexts_` / `contexts `."""
    metrics: dict[str, Any] = {}
    per: dict[str, dict[str, float]] = {}
    runs: list[Any] = []
    info: dict[str, Any] = {}
    for which in SETS:
        if which == "suite":
            m, p, played, extra = measure(ctx, alias, f"{name}-{which}", size, (FAIR, ctx.label))
        else:
            m, p, played, extra = measure(ctx, alias, f"{name}-{which}", size, (FAIR,),
                                          contexts(size["heldout"], contexts_path),
                                          contexts(size["partner_heldout"], contexts_path))
        pre = "" if which == "suite" else "contexts_"
        metrics.update({pre + k: v for k, v in m.items()})
        per.update({(pre.replace("_", " ") + k): v for k, v in p.items()})
        info.update({pre + k: v for k, v in extra.items()})
        runs += played
    instances = sorted({r.instance_id for run in runs for r in run.records})
    return Measured(metrics, per, walls(runs), instances, info)


@experiment("dond-selfplay-rl")
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, start_adapter = ctx.registered(START, "dond-selfplay", "dond-selfplay-rl")
    measured = partial(measure_policy, ctx, size=size, contexts_path=contexts_file(ctx))
    start = measured(alias, name="dond-sprl-start")
    exp = Experiment(name="dond-selfplay-rl", description="Deal or No Deal self-play RL: GRPO on sparring's trainer "
                     "from the self-play SFT policy, the learner in both seats and trained in both, a running "
                     "baseline per seat (RAE); rewarded by own points (self) or own + 0.5 x the other's (lambda); "
                     "held-out generated and selfplay.txt scenarios, in self-play and against fair-negotiator and "
                     "the base model.", model=ctx.label, primary="mutual_deal_rate",
                     training_ids=[], heldout_ids=start.instances,
                     target="self-play deals where both score >= 0.5 with a paired interval above 0 over the start, "
                            "each seat's mean points >= 4, points against fair-negotiator >= 1.08 (dond-rl), on both "
                            "held-out sets")
    exp.stages.append(Stage("start", 0, start.metrics, start.walls, info={"adapter": start_adapter, **start.info}))
    ctx.progress(exp)
    curves: dict[str, dict[str, list[Any]]] = {}
    for k, arm in enumerate(ARMS, start=1):
        result = run_arm(ctx, exp, f"dond-sprl-{arm}", arm_config(ctx, size, start_adapter, arm),
                         partial(measured, name=f"dond-sprl-{arm}"), stage=arm, step=k, start=start,
                         info={"steps": size["steps"], "objective": ARMS[arm]})
        curves[arm] = result.curves()
    plot_training(curves, ctx.out / "curves" / "dond-selfplay-rl-training.png", TRAINING_PANELS)
    exp.notes.append(f"each arm: {size['steps']} GRPO steps of {size['generations'] * size['prompts']} self-play games "
                     f"({size['generations']} of a scenario), both seats trained, baseline rae (advantages / the step's reward std), lr {LEARNING_RATE}, "
                     "beta 0, -0.1 a refused reply, refused replies trained; self: own points; lambda: own + 0.5 x the "
                     "other's (its prompt says so)")
    exp.notes.append(f"held-out, standard game (objective self), T=0.8: {size['heldout']} scenarios of each set in "
                     f"self-play and {size['partner_heldout']} x 2 seats against fair-negotiator; the generated set "
                     f"also {size['partner_heldout']} x 2 seats against the base model; sets: the generated test "
                     "split, and selfplay.txt's test split (one game a scenario)")
    exp.wall_s = time.perf_counter() - begin
    return exp
