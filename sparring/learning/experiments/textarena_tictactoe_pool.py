"""Experiment: TextArena TicTacToe against players who block — does GRPO against a pool of
opponents teach the bundled model to play, not only to beat a player who never blocks? (issue #60)

`textarena-tictactoe-rl` trains against `textarena-random` alone. Its policy beats that player
(0.94) but the random player never takes a win or blocks one, so nothing in those games rewards
defence. Here, from the same start (the conversation-view warm start), two arms with the same
reward, groups, learning rate and steps:
- `random`: `textarena-tictactoe-rl`'s arm itself (the same config: an earlier run of it into the
  same output is kept, not retrained);
- `pool`: each group of 4 games (one training seed and seat) meets one opponent drawn from
  `textarena-random`, `textarena-tictactoe-blocker` (takes a win when it can, blocks one when it
  must, else random) and `textarena-tictactoe-perfect` (minimax: it never loses) — the trainer's
  `opponents: {mode: pool}`. Against the perfect player the best result is a draw (0 against −1 for
  a loss), so a group there ranks games by not losing.
Every policy plays the same held-out seeds (TextArena's test range, disjoint from every training
seed: checked) from both seats at T = 0.7 against the random player and against the perfect one:
win / draw / loss rates, the refused-move share, and paired per (seed, seat) differences — of the
win against the random player and of "not lost" (a draw or a win) against the perfect player.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.experiments import textarena_tictactoe_rl as rl
from sparring.learning.experiments.textarena_tictactoe import OPPONENT, game_key, match_config, score_games
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage, paired, rate

PERFECT = "textarena-tictactoe-perfect"
BLOCKER = "textarena-tictactoe-blocker"
POOL = (OPPONENT, BLOCKER, PERFECT)
SIZES = rl.SIZES
TRAINING_PANELS = training_panels("win 1 / loss -1, mixed opponents",
                                  {"reward/Player 0": "reward, first to move", "reward/Player 1": "reward, second to move"})


def pool_config(ctx: Context, size: dict[str, Any], start: str) -> dict[str, Any]:
    """`textarena-tictactoe-rl`'s arm with the pool of opponents: one drawn per group."""
    data = rl.arm_config(ctx, size, start)
    experiment_cfg = dict(data["experiment"])
    experiment_cfg["agents"] = {**experiment_cfg["agents"], **{
        "blocker": {"role": "player", "model": BLOCKER}, "perfect": {"role": "player", "model": PERFECT}}}
    experiment_cfg["tournament"] = {"type": "custom", "matchups": [["learner", "opponent"], ["learner", "blocker"],
                                                                   ["learner", "perfect"]]}
    return {**data, "experiment": experiment_cfg, "opponents": {"mode": "pool"}}


def _match(model: str, size: dict[str, Any], opponent: str) -> dict[str, Any]:
    """`textarena-tictactoe`'s held-out match (so a stored run of it is reused) against `opponent`."""
    cfg = match_config(model, size, 0.7, "test", size["heldout"])
    cfg["agents"] = {**cfg["agents"], "opponent": {"role": "player", "model": opponent}}
    return cfg


def measure(ctx: Context, model: str, stage: str, size: dict[str, Any]) -> Measured:
    """`model` on the held-out seeds against the random player (named as `textarena-tictactoe-rl`
    names its runs, so the games it stored are reused) and against the perfect player."""
    names = {OPPONENT: ("random", f"tictactoe-rl-{stage}"), PERFECT: ("perfect", f"tictactoe-pool-{stage}-vs-perfect")}
    metrics: dict[str, Any] = {}
    per: dict[str, dict[str, float]] = {}
    walls: dict[str, float] = {}
    instances: set[str] = set()
    for opponent, (short, name) in names.items():
        played = ctx.play(_match(model, size, opponent), name)
        m, wins = score_games(played.records)
        draws = {game_key(r): float(bool((r.outcome.metrics if r.outcome else {}).get("draw"))) for r in played.records}
        metrics.update({f"vs_{short}_{k}": v for k, v in m.items() if k != "moves_per_game"})
        metrics[f"vs_{short}_loss_rate"] = rate([not (wins[k] or draws[k]) for k in wins])
        per[f"win vs {short}"] = wins
        per[f"not lost vs {short}"] = {k: max(wins[k], draws[k]) for k in wins}
        walls.update({f"{k}_{short}": v for k, v in played.walls("heldout").items()})
        instances |= {r.instance_id for r in played.records}
    return Measured(metrics, per, walls, sorted(instances))


@experiment("textarena-tictactoe-pool")
def run(ctx: Context) -> Experiment:
    require_extra("textarena-tictactoe-pool", "textarena", "textarena", "TextArena")
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, warm_s, warm_info, training = rl.conversation_start(ctx, size)
    start = ctx.adapters[alias]
    start_m = measure(ctx, alias, "start", size)
    exp = Experiment(name="textarena-tictactoe-pool",
                     description="TextArena TicTacToe: GRPO against the random player alone vs against a pool "
                                 "(random, a blocker, a perfect minimax player; one per group), the same start, "
                                 "reward, steps; held out against the random and the perfect player.",
                     model=ctx.label, primary="vs_perfect_draw_rate", training_ids=sorted(training),
                     heldout_ids=start_m.instances,
                     target="against the perfect player: not lost over the start, paired interval above 0; "
                            "against the random player: win not below the start; refused moves <= 0.05")
    exp.stages.append(Stage("start", 0, start_m.metrics, {"train": warm_s, **start_m.walls}, info=warm_info))
    ctx.progress(exp)
    arms: dict[str, Any] = {}
    measured: dict[str, Measured] = {}

    def measure_arm(trained: str, stage: str) -> Measured:
        measured[stage] = measure(ctx, trained, stage, size)
        return measured[stage]

    for name, data, stage in (("tictactoe-grpo", rl.arm_config(ctx, size, start), "grpo"),
                              ("tictactoe-pool", pool_config(ctx, size, start), "pool")):
        arms[stage] = run_arm(ctx, exp, name, data, partial(measure_arm, stage=stage),
                              stage=stage, step=size["steps"], start=start_m)
    for label in measured["pool"].per:
        exp.paired[f"{label} pool - grpo"] = paired(measured["grpo"].per[label], measured["pool"].per[label])
    plot_training({k: a.curves() for k, a in arms.items()}, ctx.out / "curves" / "textarena-tictactoe-pool-training.png",
                  TRAINING_PANELS)
    exp.notes.append("start: the warm start an earlier invocation into this output registered" if warm_info.get("reused")
                     else f"start: SFT in the {warm_info['view']} view, {warm_info['steps']} steps of 4 rows")
    exp.notes.append(f"both arms: {size['steps']} GRPO steps of {size['generations'] * size['prompts']} games "
                     f"({size['prompts']} groups of {size['generations']}), lr {rl.LEARNING_RATE}, beta 0, refused "
                     "moves trained with a 0.1 penalty each; grpo = textarena-tictactoe-rl's arm (vs "
                     f"{OPPONENT}); pool = one of {', '.join(POOL)} per group")
    exp.notes.append("held out: the test seed range, each seed from both seats, T=0.7, against "
                     f"{OPPONENT} and {PERFECT}; paired by (seed, seat)")
    exp.wall_s = time.perf_counter() - begin
    return exp
