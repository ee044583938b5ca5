"""Experiment 1: TextWorld cooking, SFT on gold demonstrations of training games → held-out games.

Training instances are the simulator's `train` fold, held-out ones its `dev` fold (different
recipes and layouts; ids checked disjoint). The gold policy plays the training games; each gold
episode becomes ONE multi-turn SFT row — the prompt of its last turn plus the last command — in
which every gold command is an assistant turn, so one forward/backward pass trains all of them.
The games are played with `history_view: full` and the whole history: every observation stays in
the conversation exactly as the player saw it (the history only grows), so turn k of the row sees
exactly what the player saw at turn k, and the cookbook's text stays in view once read: every gold
command is predictable from its prompt. Observations are the simulator's answers only
(`show_state: false`, as in TextWorld itself: moving and `look around` answer with the room,
`inventory` with the inventory) and do not list the valid commands (`show_valid_actions: false`):
repeating the room and inventory every turn made gold rows 2.6x longer (3,352 against 1,287 tokens
on 24 training games), and the list doubles an observation again. The base model and each trained
adapter (2 training seeds) play the held-out games greedily: success rate (Wilson), normalised
score and invalid-command rate (bootstrap), and the paired per-game score difference against the
base model.
"""

from __future__ import annotations

import time
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, mean, paired, rate

WORLD = {"numLocations": 3, "numIngredients": 2, "numDistractorItems": 0, "includeDoors": 0,
         "limitInventorySize": 0}
SIZES: dict[str, dict[str, Any]] = {
    # quick: the gold policy needs its whole path (11-13 commands in 1-room worlds) to win and give
    # rows; the tiny model plays the held-out games for 4 steps only
    "quick": {"train": 2, "heldout": 3, "max_steps": 4, "gold_max_steps": 30, "steps": 1, "chunks": 1, "seeds": [0, 1],
              "params": {**WORLD, "numLocations": 1}, "max_length": 4096},
    # full: gold paths here take 10-22 commands, so 24 steps; one training chunk per seed: one epoch
    # of the 48 rows (~1,340 tokens each, at most ~1,900; ~64k tokens: LoRA SFT trained ~116
    # tokens/s, ~11 s a row, at two threads here) and three evaluations of the 40 held-out games,
    # all 40 live at once (one batch per turn): 41.8 min in all
    "full": {"train": 48, "heldout": 40, "max_steps": 24, "steps": 48, "chunks": 1, "seeds": [0, 1],
             "params": WORLD, "max_length": 3072, "max_live": 40},
}
# textworld-sft-data: one seed trained on the first n gold games for each n (the 48 of
# textworld-sft lie between): SFT ~11 s a row at two threads, so 24 + 96 rows 22 min; 41.9 min in all
MAX_LIVE = 8
GAME_ARGS = {"show_valid_actions": False, "show_state": False, "history": None, "history_view": "full",
             "keep_recipe": False}


def game_config(model: str, split: str, n: int, size: dict[str, Any], sampling: dict[str, Any]) -> dict[str, Any]:
    return {"game": "textworld_cooking", "view": "rendered", "game_args": {**GAME_ARGS, "max_steps": size["max_steps"]},
            "dataset": {"name": "cookingworld", "split": split, "limit": n, "args": {"params": size["params"]}},
            "agents": {"cook": {"role": "player", "model": model, "sampling": sampling}},
            "tournament": {"type": "self_play", "participants": ["cook"]},
            "run": {"seed": 0, "max_live": size.get("max_live", MAX_LIVE)}}


def episode_rows(records: list[Any], agent: str = "cook") -> list[dict[str, Any]]:
    """One multi-turn SFT row per episode: its last conversation, which holds every command, as a
    `messages` row so that every command in it is a trained assistant turn (the per-call export
    is prompt/completion, earlier turns context). With `history_view: full` and the whole history,
    every call's prompt is a prefix of that conversation, so each turn is trained on exactly what
    the player saw."""
    from sparring.train.export import ExportFilters, sft_rows

    last: dict[str, dict[str, Any]] = {}
    for row in sft_rows(records, ExportFilters(agent=agent)):
        key = row["meta"].get("episode_id") or row["meta"].get("episode")
        messages = row.get("messages") or [*row["prompt"], *row["completion"]]
        turns = sum(m["role"] == "assistant" for m in messages)
        if key not in last or turns >= sum(m["role"] == "assistant" for m in last[key]["messages"]):
            last[key] = {"messages": messages, "meta": row["meta"]}
    return list(last.values())


def evaluate(ctx: Context, model: str, name: str, n: int, size: dict[str, Any]) -> tuple[dict[str, Any], dict, Played]:
    played = ctx.play(game_config(model, "dev", n, size, {"temperature": 0.0, "max_new_tokens": 12, "stop": ["\n"]}),
                      name)
    per = {r.instance_id: r.outcome.metrics for r in played.records if r.outcome}
    metrics = {"success": rate([bool(m["success"]) for m in per.values()]),
               "score": mean([float(m["score"]) for m in per.values()]),
               "invalid_rate": mean([float(m["invalid_rate"]) for m in per.values()])}
    return metrics, {k: float(m["score"]) for k, m in per.items()}, played


def gold_rows(ctx: Context, size: dict[str, Any], name: str,
               by_instance: bool = False) -> tuple[Played, list[dict[str, Any]]]:
    """The gold policy on `size["train"]` training games and one SFT row per won episode, in the
    run's order or (`by_instance`) ordered by instance id, so that the first n rows of a larger
    set are the rows of the first n games."""
    gold_size = {**size, "max_steps": size.get("gold_max_steps", size["max_steps"])}
    played = ctx.play(game_config("textworld-gold", "train", size["train"], gold_size, {"max_new_tokens": 16}), name)
    won = [r for r in played.records if r.outcome and r.outcome.metrics.get("success")]
    return played, episode_rows(sorted(won, key=lambda r: r.instance_id) if by_instance else won)


def sft(ctx: Context, rows: list[dict[str, Any]], size: dict[str, Any], seed: int, steps: int, name: str,
         adapter: str | None = None) -> tuple[Any, float]:
    """One LoRA SFT run (batch 1: a row a step) into OUT/adapters/NAME; (result, seconds)."""
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.trainers import train_sft

    settings = TrainSettings(model=ctx.model, adapter=adapter, method="sft", learning_rate=5e-4, max_steps=steps,
                             batch_size=1, gradient_accumulation=1, max_length=size["max_length"], seed=seed,
                             lora=LoraSettings(r=16, alpha=32))
    t = time.perf_counter()
    result = train_sft(rows, settings, ctx.out / "adapters" / name)
    return result, time.perf_counter() - t


def trained_stage(ctx: Context, exp: Experiment, result: Any, seconds: float, stage: str, step: int, seed: int,
                   size: dict[str, Any], base_scores: dict[str, float]) -> None:
    """Register the adapter as LABEL@STAGE, play the held-out games with it, add its stage and its
    paired score difference against the base model."""
    alias = ctx.register(stage, result.adapter)
    m, scores, played = evaluate(ctx, alias, f"textworld-{stage}", size["heldout"], size)
    exp.stages.append(Stage(stage, step, m, {"train": seconds, **played.walls("heldout")}, seed=seed,
                            info={"rows": result.rows, "dropped": result.dropped, "loss": result.loss,
                                  "adapter": str(result.adapter)}))
    exp.paired[f"score {stage} - base"] = paired(base_scores, scores, seed=seed)
    ctx.progress(exp)


def base_stage(ctx: Context, name: str, description: str, gold: Played, rows: list[dict[str, Any]],
                size: dict[str, Any], run: str) -> tuple[Experiment, dict[str, float], Played]:
    """The experiment with its base-model stage (the held-out games before training, run `run`)."""
    base_m, base_scores, base_played = evaluate(ctx, ctx.label, run, size["heldout"], size)
    exp = Experiment(name=name, description=description, model=ctx.label, primary="score",
                     training_ids=sorted({r.instance_id for r in gold.records}), heldout_ids=sorted(base_scores),
                     target=">= 30 points of success above the base model, invalid commands <= 10% (>= 40 held-out "
                            "games)")
    success = rate([bool(r.outcome and r.outcome.metrics["success"]) for r in gold.records]).value
    exp.stages.append(Stage("base", 0, base_m, {**base_played.walls("heldout"), "gold_demos": gold.seconds},
                            info={"gold_success": success, "rows": len(rows)}))
    return exp, base_scores, base_played


def finish(ctx: Context, exp: Experiment, base_played: Played, size: dict[str, Any], rows: list[dict[str, Any]],
            trained_rows: int, train_s: float, start: float) -> Experiment:
    from sparring.learning.loops import speed
    from sparring.learning.speed import row_tokens

    tokens_per_row = sum(row_tokens(ctx.model, r) for r in rows) / len(rows) if rows else 0.0
    exp.speed = speed(ctx, base_played, size.get("max_live", MAX_LIVE), tokens_per_row * trained_rows, train_s)
    exp.notes.append(f"{len(rows)} SFT rows (one per gold episode, {tokens_per_row:.0f} tokens on average); "
                     f"gold policy success on the training games {exp.stages[0].info['gold_success']:.2f}")
    exp.wall_s = time.perf_counter() - start
    return exp


@experiment("textworld-sft")
def run(ctx: Context) -> Experiment:
    size = SIZES[ctx.size]
    start = time.perf_counter()
    gold, rows = gold_rows(ctx, size, "textworld-gold")
    exp, base_scores, base_played = base_stage(
        ctx, "textworld-sft", "TextWorld cooking: LoRA SFT on gold demonstrations (one multi-turn row per "
        "episode), held-out dev-fold games played greedily.", gold, rows, size, "textworld-base")
    train_s, trained_steps = 0.0, 0
    for seed in size["seeds"]:
        adapter = None
        for chunk in range(1, size["chunks"] + 1):
            result, seconds = sft(ctx, rows, size, seed, size["steps"], f"textworld-sft-s{seed}-c{chunk}", adapter)
            train_s, trained_steps = train_s + seconds, trained_steps + result.steps
            adapter = str(result.adapter)
            stage = f"textworld-sft-s{seed}" + ("" if chunk == size["chunks"] else f"-c{chunk}")
            trained_stage(ctx, exp, result, seconds, stage, chunk * size["steps"], seed, size, base_scores)
    return finish(ctx, exp, base_played, size, rows, trained_steps, train_s, start)  # batch 1: a row a step
