"""Experiment: TextArena TicTacToe against a fixed opponent — does filtered self-play SFT (expert
iteration, lm-selfplay's filter) make the bundled model win more and move validly more often?

The policy plays TextArena's TicTacToe-v0 against the random legal player (`textarena-random`)
from both seats on training seeds (TextArena's train range, seeds 0..), sampled at T=1; the games
it won become SFT rows of its own moves (each move after exactly the observation it answered);
one SFT run trains a LoRA adapter (the existing loop, `sparring.train.loop`). Before and after,
the policy plays the same held-out seeds (the test range, 1,000,000..: disjoint by construction,
and checked) from both seats at T=0.7: win rate (Wilson), the share of its moves TextArena
refused as invalid, the draw rate, and the paired per-game win difference.
"""

from __future__ import annotations

import time
from typing import Any

from sparring.train.learning.context import Context, Played
from sparring.train.learning.registry import experiment
from sparring.train.learning.results import Experiment, Stage, mean, rate

ENV = "TicTacToe-v0"
SIZES: dict[str, dict[str, Any]] = {
    # a tiny random model wins no game: every game is kept, a pipeline check only
    "quick": {"games": 4, "heldout": 4, "tokens": 8, "max_steps": 1, "keep": "all"},
    # full: 64 training seeds x 2 seats = 128 games; the ~40 won give ~130 rows of ~450 tokens, one
    # capped epoch of 32 steps of batch 4; 64 held-out seeds x 2 seats = 128 games per evaluation
    "full": {"games": 64, "heldout": 64, "tokens": 16, "max_steps": 32, "keep": "winners"},
}
MAX_LIVE = 32
OPPONENT = "textarena-random"


def _dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "seeds", "split": split, "args": {"n": n}}


def _match(model: str, size: dict[str, Any], temperature: float, split: str, n: int) -> dict[str, Any]:
    return {"game": "textarena", "game_args": {"env_id": ENV}, "dataset": _dataset(split, n),
            "agents": {"policy": {"role": "player", "model": model,
                                  "sampling": {"temperature": temperature, "max_new_tokens": size["tokens"]}},
                       "opponent": {"role": "player", "model": OPPONENT}},
            "tournament": {"type": "custom", "matchups": [["policy", "opponent"]], "flip": True},
            "run": {"seed": 0, "max_live": MAX_LIVE}}


def _loop_config(ctx: Context, size: dict[str, Any]) -> Any:
    from sparring.train.loop_config import LoopConfig

    selfplay = _match(ctx.label, size, 1.0, "train", size["games"])
    return LoopConfig.model_validate({
        "name": "textarena-tictactoe", "alias": "tictactoe", "method": "sft", "iterations": 1,
        "output_dir": str(ctx.out / "loops" / "textarena-tictactoe"), "models_file": str(ctx.models_file),
        "selfplay": selfplay,
        "export": {"keep": size["keep"], "include_aborted": True, "cumulative": False},
        "train": {"method": "sft", "model": ctx.model, "learning_rate": 2e-4, "epochs": 1, "batch_size": 4,
                  "max_steps": size["max_steps"], "max_length": 1024, "lora": {"r": 8, "alpha": 16}},
        "evaluation": {"dataset": _dataset("test", size["heldout"]), "flip": True}})


def evaluate(ctx: Context, model: str, name: str, size: dict[str, Any]) -> tuple[dict, dict, Played]:
    """`model` against the random player on the held-out seeds, both seats."""
    played = ctx.play(_match(model, size, 0.7, "test", size["heldout"]), name)
    wins, draws, valid = [], [], []
    per: dict[str, float] = {}
    for r in played.records:
        seat = next((p for p, s in r.seats.items() if s.agent == "policy"), None)
        m = r.outcome.metrics if r.outcome else {}
        won = bool(r.outcome and seat and r.outcome.winner == seat)
        wins.append(won)
        draws.append(bool(m.get("draw")))
        attempts = int((m.get("attempts") or {}).get(seat, 0))
        bad = int((m.get("invalid_moves") or {}).get(seat, 0))
        valid.extend([True] * (attempts - bad) + [False] * bad)
        per[f"{r.instance_id}/{'flip' if r.flip else 'plain'}"] = float(won)
    metrics = {"win_rate": rate(wins), "invalid_move_share": rate([not v for v in valid]),
               "draw_rate": rate(draws), "moves_per_game": mean([len(valid) / max(len(wins), 1)])}
    return metrics, per, played


@experiment("textarena-tictactoe")
def run(ctx: Context) -> Experiment:
    from sparring.errors import SparringError
    from sparring.train.learning.loops import run_iterations, speed
    from sparring.train.loop import Loop

    try:
        import textarena  # noqa: F401
    except ImportError:
        raise SparringError("textarena-tictactoe needs TextArena: pip install 'sparring[textarena]'") from None
    size = SIZES[ctx.size]
    start = time.perf_counter()
    loop = Loop(_loop_config(ctx, size), "<learning suite>", console=ctx.console)
    loop.start()
    base_m, base_per, base_played = evaluate(ctx, ctx.label, "tictactoe-base", size)
    heldout = sorted({r.instance_id for r in base_played.records})
    exp = Experiment(name="textarena-tictactoe",
                     description="TextArena TicTacToe-v0 against a random legal player: filtered self-play SFT on the "
                                 "policy's won training games (expert iteration); held-out seeds, both seats.",
                     model=ctx.label, primary="win_rate", training_ids=[], heldout_ids=heldout,
                     target="win rate and invalid-move share before -> after on >= 128 held-out games, with "
                            "intervals, whatever the result")
    exp.stages.append(Stage("base", 0, base_m, base_played.walls("heldout")))
    ctx.progress(exp)
    done = run_iterations(ctx, exp, loop, "tictactoe", lambda a, n: evaluate(ctx, a, n, size), base_per,
                          "win", lambda export, train: {"rows": train["rows"], "loss": train["loss"],
                                                        "steps": train["steps"], "games": export["episodes"]})
    exp.speed = speed(ctx, base_played, MAX_LIVE, done.train_tokens, done.train_s)
    exp.notes.append(f"training: {size['games']} training seeds x 2 seats at T=1 against {OPPONENT}; "
                     f"kept: {size['keep']}; SFT {size['max_steps']} steps of batch 4 at most")
    exp.notes.append("held-out: the test seed range (1,000,000..), disjoint from the training range (0..); "
                     "each seed played from both seats; paired by (seed, seat)")
    exp.wall_s = time.perf_counter() - start
    return exp
