"""Experiment: TextArena TicTacToe against a random legal player, learnt from reward — GRPO on
sparring's trainer from the demonstrator warm start of `textarena-tictactoe`.

The expert iteration of `textarena-tictactoe` cut refused moves (0.91 -> 0.41) but not losses: a
refused move past TextArena's allowance loses the game, and SFT on accepted moves reinforced a fixed
opening. Here the learner's reward is the game's (win 1, draw 0, loss -1) minus 0.1 per refused
move, and the refused moves themselves are trained with their game's advantage (`train_rejected`),
so a move TextArena refuses is pushed down where it was written. Groups are games of one seed and
seat against `textarena-random` (the same board), both seats trained. The start (the warm start
adapter, reused when the suite registered it) and the trained policy play the same held-out seeds
(TextArena's test range, disjoint from every training seed: checked) from both seats, T=0.7 as
`textarena-tictactoe` evaluates: win rate (Wilson), refused-move share, paired per (seed, seat).
"""

from __future__ import annotations

import time
from typing import Any

from sparring.train.learning.context import Context
from sparring.train.learning.online import AS_MEASURED
from sparring.train.learning.registry import experiment
from sparring.train.learning.report import plot_training
from sparring.train.learning.results import Experiment, Stage, paired
from sparring.train.learning.textarena import ENV, MAX_LIVE, OPPONENT, evaluate, warm_start
from sparring.train.learning.textarena import SIZES as EI_SIZES

SIZES: dict[str, dict[str, Any]] = {
    "quick": {**EI_SIZES["quick"], "train": 8, "steps": 1, "generations": 2, "prompts": 1},
    # full: the warm start of textarena-tictactoe (24 SFT steps; reused when registered), then 15 GRPO
    # steps of 8 games (4 of a seed and seat, 2 seeds), 128 held-out games per evaluation. A step costs
    # ~2 minutes alone (every move re-reads the game so far: ~100 model tokens per trained token),
    # so 15 steps, not 30, keep the experiment within its hour
    "full": {**EI_SIZES["full"], "train": 400, "steps": 15, "generations": 4, "prompts": 2},
}
LEARNING_RATE = 2e-4
WARM_STAGE = "tictactoe-warm"
# the per-step curves drawn for the page (OUT/curves/textarena-tictactoe-rl-training.png)
TRAINING_PANELS = (("reward", "mean reward (win 1 / loss -1, -0.1 a refused move)"),
                   ("reward/Player 0", "reward, first to move"), ("reward/Player 1", "reward, second to move"),
                   ("entropy", "entropy (nats/token)"), ("pg_loss", "policy loss"),
                   ("zero_advantage_groups", "groups with no advantage"))


def arm_config(ctx: Context, size: dict[str, Any], start: str) -> dict[str, Any]:
    experiment = {"game": "textarena", "game_args": {"env_id": ENV},
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
            # 2 games a forward/backward: a game's history is ~1.5k tokens, and the first full run, at
            # the default 8, was killed by the OOM killer at 24 GB in its second step
            "micro_batch_size": 2, "save_steps": 5, "seed": 0, "lr_scheduler_type": "constant", **AS_MEASURED}


@experiment("textarena-tictactoe-rl")
def run(ctx: Context) -> Experiment:
    from sparring.errors import SparringError
    from sparring.train.learning.online import train

    try:
        import textarena  # noqa: F401
    except ImportError:
        raise SparringError("textarena-tictactoe-rl needs TextArena: pip install 'sparring[textarena]'") from None
    size = SIZES[ctx.size]
    begin = time.perf_counter()
    alias = f"{ctx.label}@{WARM_STAGE}"
    warm_s, warm_info = 0.0, {"reused": True}
    training: set[str] = set()
    if alias not in ctx.adapters:
        t = time.perf_counter()
        warm, warm_info, demos = warm_start(ctx, size)
        warm_s = time.perf_counter() - t
        training = {r.instance_id for r in demos.records}
        alias = ctx.register(WARM_STAGE, warm)
    start = ctx.adapters[alias]
    m, start_per, played = evaluate(ctx, alias, "tictactoe-rl-start", size)
    exp = Experiment(name="textarena-tictactoe-rl", description="TextArena TicTacToe against a random legal player: "
                     "GRPO on sparring's trainer (win 1 / draw 0 / loss -1, minus 0.1 a refused move, refused moves "
                     "trained) from the demonstrator warm start; held-out seeds, both seats.",
                     model=ctx.label, primary="win_rate", training_ids=sorted(training),
                     heldout_ids=sorted({r.instance_id for r in played.records}),
                     target="win rate above the start, paired interval above 0 (128 held-out games)")
    exp.stages.append(Stage("start", 0, m, {"train": warm_s, **played.walls("heldout")}, info=warm_info))
    ctx.progress(exp)
    result = train(ctx, "tictactoe-grpo", arm_config(ctx, size, start))
    exp.training_ids = sorted(training | set(result.training_ids))
    exp.__post_init__()
    trained = ctx.register("tictactoe-grpo", result.adapter)
    m, per, played = evaluate(ctx, trained, "tictactoe-rl-grpo", size)
    exp.stages.append(Stage("grpo", size["steps"], m, {"train": result.seconds, **played.walls("heldout")},
                            info={"curves": result.curves(), "cost": result.cost()}))
    exp.paired["win grpo - start"] = paired(start_per, per)
    plot_training({"grpo": result.curves()}, ctx.out / "curves" / "textarena-tictactoe-rl-training.png", TRAINING_PANELS)
    exp.notes.append(f"start: {'the warm start textarena-tictactoe registered' if warm_info.get('reused') else 'SFT on '}"
                     f"{'' if warm_info.get('reused') else str(warm_info.get('rows')) + ' random-player moves'}")
    exp.notes.append(f"GRPO: {size['steps']} steps of {size['generations'] * size['prompts']} games against {OPPONENT} "
                     f"(lr {LEARNING_RATE}, beta 0, refused moves trained with a 0.1 penalty each)")
    exp.wall_s = time.perf_counter() - begin
    return exp
