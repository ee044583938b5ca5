"""Experiment: TextArena TicTacToe against a random legal player, learnt from reward — GRPO on
sparring's trainer from a demonstrator warm start as `textarena-tictactoe`'s, every game in the
conversation view (a chat that only grows: each game trains as one sequence, issue #59).

The expert iteration of `textarena-tictactoe` cut refused moves (0.91 -> 0.41) but not losses: a
refused move past TextArena's allowance loses the game, and SFT on accepted moves reinforced a fixed
opening. Here the learner's reward is the game's (win 1, draw 0, loss -1) minus 0.1 per refused
move, and the refused moves themselves are trained with their game's advantage (`train_rejected`),
so a move TextArena refuses is pushed down where it was written. Groups are games of one seed and
seat against `textarena-random` (the same board), both seats trained. The start (the warm start
adapter, reused when an earlier invocation registered it) and the trained policy play the same held-out seeds
(TextArena's test range, disjoint from every training seed: checked) from both seats, T=0.7 as
`textarena-tictactoe` evaluates: win rate (Wilson), refused-move share, paired per (seed, seat).
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.arms import Measured, run_arm
from sparring.learning.context import Context
from sparring.learning.experiments.textarena_tictactoe import ENV, MAX_LIVE, OPPONENT, evaluate, warm_start
from sparring.learning.experiments.textarena_tictactoe import SIZES as EI_SIZES
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.report import plot_training, training_panels
from sparring.learning.results import Experiment, Stage

SIZES: dict[str, dict[str, Any]] = {
    "quick": {**EI_SIZES["quick"], "train": 8, "steps": 1, "generations": 2, "prompts": 1, "view": "conversation"},
    # full: a warm start of `textarena-tictactoe`'s size in the conversation view (its 24 x 4 moves:
    # a row is a whole game), then 30 GRPO steps of 8 games (4 of a seed and seat, 2 seeds), 128
    # held-out games per evaluation. The game is a chat that only grows (issue #59), so each game
    # trains as one sequence: the 2026-11-28 run re-read the game at every move (94 model tokens per
    # trained token, ~2 minutes a step alone) and was cut to 15 steps to fit its hour
    "full": {**EI_SIZES["full"], "train": 400, "steps": 30, "generations": 4, "prompts": 2, "view": "conversation"},
}
LEARNING_RATE = 2e-4
WARM_STAGE = "tictactoe-warm-conversation"  # textarena-tictactoe's own warm start (`tictactoe-warm`) is rendered
# the per-step curves drawn for the page (OUT/curves/textarena-tictactoe-rl-training.png)
TRAINING_PANELS = training_panels("win 1 / loss -1, -0.1 a refused move",
                                  {"reward/Player 0": "reward, first to move", "reward/Player 1": "reward, second to move"})


def conversation_start(ctx: Context, size: dict[str, Any]) -> tuple[str, float, dict[str, Any], set[str]]:
    """The conversation-view warm start: (its alias, seconds trained now, info, its training seeds).
    An earlier invocation into the same output registered it: then it is reused, not retrained."""
    alias = f"{ctx.label}@{WARM_STAGE}"
    if alias in ctx.adapters:
        return alias, 0.0, {"reused": True}, set()
    t = time.perf_counter()
    warm, info, demos = warm_start(ctx, size)
    return ctx.register(WARM_STAGE, warm), time.perf_counter() - t, info, {r.instance_id for r in demos.records}


def arm_config(ctx: Context, size: dict[str, Any], start: str) -> dict[str, Any]:
    experiment = {"game": "textarena", "game_args": {"env_id": ENV}, "view": size["view"],
                  "dataset": {"name": "seeds", "split": "train", "args": {"n": size["train"]}},
                  "models_file": str(ctx.models_file.resolve()),
                  "agents": {"learner": {"role": "player", "model": "learner",
                                         "sampling": {"temperature": 1.0, "max_new_tokens": size["tokens"]}},
                             "opponent": {"role": "player", "model": OPPONENT}},
                  "tournament": {"type": "custom", "matchups": [["learner", "opponent"]]},
                  "run": {"seed": 0, "max_live": MAX_LIVE}}
    return {"algorithm": "grpo", "trainer": "sparring", "model": ctx.model, "adapter": start,
            "learner_agent": "learner", "experiment": experiment, "seats": [0, 1],
            "num_generations": size["generations"], "prompts_per_step": size["prompts"], "max_steps": size["steps"],
            "learning_rate": LEARNING_RATE, "beta": 0.0, "format_penalty": 0.1, "train_rejected": True,
            # the trainer's defaults otherwise: a token budget per forward measured from memory
            # (the 2026-11-28 run, at 8 rendered games a forward, was killed by the OOM killer at 24
            # GB), no dropout in training passes, the adapter merged for the rollout
            "save_steps": 5, "seed": 0, "lr_scheduler_type": "constant"}


def _measured(metrics: dict[str, Any], per: dict[str, float], played: Any) -> Measured:
    return Measured(metrics, {"win": per}, played.walls("heldout"), sorted({r.instance_id for r in played.records}))


@experiment("textarena-tictactoe-rl")
def run(ctx: Context) -> Experiment:
    require_extra("textarena-tictactoe-rl", "textarena", "textarena", "TextArena")
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias, warm_s, warm_info, training = conversation_start(ctx, size)
    start = ctx.adapters[alias]
    start_m = _measured(*evaluate(ctx, alias, "tictactoe-rl-start", size))
    exp = Experiment(name="textarena-tictactoe-rl", description="TextArena TicTacToe against a random legal player: "
                     "GRPO on sparring's trainer (win 1 / draw 0 / loss -1, minus 0.1 a refused move, refused moves "
                     "trained) from the demonstrator warm start; held-out seeds, both seats.",
                     model=ctx.label, primary="win_rate", training_ids=sorted(training),
                     heldout_ids=start_m.instances,
                     target="win rate above the start, paired interval above 0 (128 held-out games)")
    exp.stages.append(Stage("start", 0, start_m.metrics, {"train": warm_s, **start_m.walls}, info=warm_info))
    ctx.progress(exp)
    result = run_arm(ctx, exp, "tictactoe-grpo", arm_config(ctx, size, start),
                     lambda trained: _measured(*evaluate(ctx, trained, "tictactoe-rl-grpo", size)),
                     stage="grpo", step=size["steps"], start=start_m)
    plot_training({"grpo": result.curves()}, ctx.out / "curves" / "textarena-tictactoe-rl-training.png",
                  TRAINING_PANELS)
    exp.notes.append("start: the warm start an earlier invocation into this output registered" if warm_info.get("reused")
                     else f"start: SFT in the {warm_info['view']} view, {warm_info['steps']} steps of 4 rows "
                     f"({warm_info['moves_per_row']} random-player moves a row, {warm_info['rows']} rows)")
    exp.notes.append(f"view: {size['view']} (training and held-out games)")
    exp.notes.append(f"GRPO: {size['steps']} steps of {size['generations'] * size['prompts']} games against {OPPONENT} "
                     f"(lr {LEARNING_RATE}, beta 0, refused moves trained with a 0.1 penalty each)")
    exp.wall_s = time.perf_counter() - begin
    return exp
