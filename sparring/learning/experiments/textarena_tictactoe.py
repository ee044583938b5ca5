"""Experiment: TextArena TicTacToe against a fixed opponent — does training make the bundled model
move validly more often, and win more? A demonstrator warm start, then filtered self-play SFT.

At 135M the model rarely writes a move in TextArena's bracket format ([4]): it loses every game on
invalid moves, so there is nothing of its own to learn from yet (validity is what small models
learn first, TRAINING-NOTES). So, as in the debate experiment:
1. warm start: the random legal player (`textarena-random`) plays itself on training seeds; SFT on
   its moves, each after exactly the observation a player sees (the format, and legal squares);
2. iterations (the existing loop, `sparring.train.loop.driver`): the policy plays TicTacToe-v0 against the
   random legal player from both seats on training seeds at T=1; its moves TextArena accepted
   (refused ones are rejected replies, never targets) become the next SFT rows (expert iteration).
Training seeds come from TextArena's train range (0..), held-out ones from the test range
(1,000,000..): disjoint by construction, and checked. Base model, warm start and each iteration
play the same held-out seeds from both seats at T=0.7: win rate (Wilson), the share of the policy's
moves TextArena refused, the draw rate, and the paired per-game win difference against the base.
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.extras import require_extra
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, mean, rate

ENV = "TicTacToe-v0"
SIZES: dict[str, dict[str, Any]] = {
    # quick: a pipeline check of the warm start on the tiny random model, which makes no valid move
    # of its own, so no iteration would have a row to train on (the loop is checked by dond-selfplay)
    "quick": {"demos": 2, "demo_steps": 1, "games": 4, "heldout": 4, "tokens": 8, "max_steps": 1, "iterations": 0},
    # full, sized to 60 min at two threads (SFT here ~45 s a step of 4 rows of ~560 tokens): 64
    # demonstration games (~575 moves) -> 24 SFT steps of batch 4; 2 iterations, each 128 training
    # seeds x 2 seats = 256 games at T=1 -> at most 12 SFT steps; 64 held-out seeds x 2 seats = 128
    # games per evaluation (Wilson half-width ~0.09 near 0.5)
    "full": {"demos": 64, "demo_steps": 24, "games": 128, "heldout": 64, "tokens": 16, "max_steps": 12,
             "iterations": 2},
}
MAX_LIVE = 32
OPPONENT = "textarena-random"
DEMO_START = 100_000  # the demonstrations' training seeds: apart from the iterations' (0..)


def _dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "seeds", "split": split, "args": {"n": n}}


def match_config(model: str, size: dict[str, Any], temperature: float, split: str, n: int) -> dict[str, Any]:
    return {"game": "textarena", "game_args": {"env_id": ENV}, "dataset": _dataset(split, n), "view": size.get("view") or "rendered",
            "agents": {"policy": {"role": "player", "model": model,
                                  "sampling": {"temperature": temperature, "max_new_tokens": size["tokens"]}},
                       "opponent": {"role": "player", "model": OPPONENT}},
            "tournament": {"type": "custom", "matchups": [["policy", "opponent"]], "flip": True},
            "run": {"seed": 0, "max_live": MAX_LIVE}}


def warm_start(ctx: Context, size: dict[str, Any]) -> tuple[str, dict[str, Any], Played]:
    """SFT on the random legal player's moves in games against itself on training seeds (their
    own seed range, beyond the iterations'), in the size's `view` (default rendered). The steps
    train `demo_steps` x 4 moves in either view: a conversation-view row is a whole game (the
    exporter joins a game whose calls extend), a rendered one a single move."""
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.export import sft_rows
    from sparring.train.trainers import train_sft

    view = size.get("view") or "rendered"
    cfg = {"game": "textarena", "game_args": {"env_id": ENV}, "view": view,
           "dataset": {"name": "seeds", "split": "train", "args": {"n": size["demos"], "start": DEMO_START}},
           "agents": {"a": {"role": "player", "model": OPPONENT}, "b": {"role": "player", "model": OPPONENT}},
           "tournament": {"type": "custom", "matchups": [["a", "b"]], "flip": False},
           "run": {"seed": 0, "max_live": MAX_LIVE}}
    suffix = "" if view == "rendered" else f"-{view}"
    demos = ctx.play(cfg, f"tictactoe-demonstrations{suffix}")
    rows = sft_rows(demos.records)
    moves_per_row = sum(int(r["meta"].get("turns", 1)) for r in rows) / max(1, len(rows))
    steps = size["demo_steps"] if view == "rendered" else max(1, round(size["demo_steps"] / moves_per_row))
    settings = TrainSettings(model=ctx.model, method="sft", learning_rate=5e-4, max_steps=steps,
                             batch_size=4, max_length=1024 if view == "rendered" else 2048,
                             lora=LoraSettings(r=8, alpha=16))
    result = train_sft(rows, settings, ctx.out / "adapters" / f"tictactoe-warm{suffix}")
    return str(result.adapter), {"rows": result.rows, "steps": result.steps, "loss": result.loss,
                                 "games": len(demos.records), "view": view,
                                 "moves_per_row": round(moves_per_row, 2)}, demos


def _loop_config(ctx: Context, size: dict[str, Any], warm: str) -> Any:
    from sparring.train.loop.config import LoopConfig

    selfplay = match_config(ctx.label, size, 1.0, "train", size["games"])
    return LoopConfig.model_validate({
        "name": "textarena-tictactoe", "alias": "tictactoe", "method": "sft", "iterations": size["iterations"],
        "output_dir": str(ctx.out / "loops" / "textarena-tictactoe"), "models_file": str(ctx.models_file),
        "warm_start": {"adapter": warm},
        "selfplay": selfplay,
        "export": {"keep": "all", "include_aborted": False, "cumulative": False},
        "train": {"method": "sft", "model": ctx.model, "learning_rate": 2e-4, "epochs": 1, "batch_size": 4,
                  "max_steps": size["max_steps"], "max_length": 1024, "lora": {"r": 8, "alpha": 16}},
        "evaluation": {"dataset": _dataset("test", size["heldout"]), "flip": True}})


def evaluate(ctx: Context, model: str, name: str, size: dict[str, Any]) -> tuple[dict, dict, Played]:
    """`model` against the random player on the held-out seeds, both seats."""
    played = ctx.play(match_config(model, size, 0.7, "test", size["heldout"]), name)
    metrics, per = score_games(played.records)
    return metrics, per, played


def game_key(record: Any) -> str:
    """A held-out game's key for paired comparisons: `seed/flip|plain`."""
    return f"{record.instance_id}/{'flip' if record.flip else 'plain'}"


def score_games(records: list[Any], agent: str = "policy") -> tuple[dict[str, Any], dict[str, float]]:
    """`agent`'s win, draw and refused-move rates over its games, and its win per game
    (`game_key`, for paired comparisons)."""
    wins, draws, valid = [], [], []
    per: dict[str, float] = {}
    for r in records:
        seat = next((p for p, s in r.seats.items() if s.agent == agent), None)
        m = r.outcome.metrics if r.outcome else {}
        won = bool(r.outcome and seat and r.outcome.winner == seat)
        wins.append(won)
        draws.append(bool(m.get("draw")))
        attempts = int((m.get("attempts") or {}).get(seat, 0))
        bad = int((m.get("invalid_moves") or {}).get(seat, 0))
        valid.extend([True] * (attempts - bad) + [False] * bad)
        per[game_key(r)] = float(won)
    metrics = {"win_rate": rate(wins), "invalid_move_share": rate([not v for v in valid]),
               "draw_rate": rate(draws), "moves_per_game": mean([len(valid) / max(len(wins), 1)])}
    return metrics, per


@experiment("textarena-tictactoe")
def run(ctx: Context) -> Experiment:
    from sparring.learning.loops import Iterations, run_iterations, speed
    from sparring.learning.results import paired
    from sparring.train.loop.driver import Loop

    require_extra("textarena-tictactoe", "textarena", "textarena", "TextArena")
    size = SIZES[ctx.size]
    start = time.perf_counter()
    base_m, base_per, base_played = evaluate(ctx, ctx.label, "tictactoe-base", size)
    heldout = sorted({r.instance_id for r in base_played.records})
    exp = Experiment(name="textarena-tictactoe",
                     description="TextArena TicTacToe-v0 against a random legal player: SFT on the random player's "
                                 "moves (warm start), then SFT on the policy's own accepted moves in games against "
                                 "it (expert iteration); held-out seeds, both seats.",
                     model=ctx.label, primary="win_rate", training_ids=[], heldout_ids=heldout,
                     target="win rate and invalid-move share before -> after on >= 128 held-out games, with "
                            "intervals, whatever the result")
    exp.stages.append(Stage("base", 0, base_m, base_played.walls("heldout")))
    ctx.progress(exp)
    t = time.perf_counter()
    warm, warm_info, demos = warm_start(ctx, size)
    warm_s = time.perf_counter() - t
    exp.training_ids = sorted({r.instance_id for r in demos.records})
    exp.__post_init__()
    alias = ctx.register("tictactoe-warm", warm)
    m, per, played = evaluate(ctx, alias, "tictactoe-warm", size)
    exp.stages.append(Stage("tictactoe-warm", 0, m, {"train": warm_s, **played.walls("heldout")}, info=warm_info))
    exp.paired["win tictactoe-warm - base"] = paired(base_per, per)
    ctx.progress(exp)
    done = Iterations(final=alias)
    if size["iterations"]:
        loop = Loop(_loop_config(ctx, size, warm), "<learning suite>", console=ctx.console)
        loop.start()
        done = run_iterations(ctx, exp, loop, "tictactoe", lambda a, n: evaluate(ctx, a, n, size), base_per,
                              "win", lambda export, train: {"rows": train["rows"], "loss": train["loss"],
                                                            "steps": train["steps"], "games": export["episodes"]})
    exp.speed = speed(ctx, base_played, MAX_LIVE, done.train_tokens, done.train_s + warm_s)
    exp.notes.append(f"warm start: {warm_info['games']} games of {OPPONENT} against itself (training seeds "
                     f"{DEMO_START}..), {warm_info['rows']} rows, {warm_info['steps']} SFT steps")
    exp.notes.append(f"iterations: {size['iterations']}, each {size['games']} training seeds x 2 seats at T=1 against "
                     f"{OPPONENT}; kept: the moves TextArena accepted; SFT {size['max_steps']} steps of batch 4 "
                     "at most")
    exp.notes.append("held-out: the test seed range (1,000,000..), disjoint from the training range (0..); "
                     "each seed played from both seats; paired by (seed, seat)")
    exp.wall_s = time.perf_counter() - start
    return exp
