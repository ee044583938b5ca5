"""Experiment 2: Deal or No Deal, lm-selfplay — a warm start on the human dialogues
(`data.txt`), then self-play filtered-SFT iterations (the existing loop, `sparring.train.loop`).

Training scenarios: the generated DoND `train` split (self-play) plus the human dialogues' own
scenarios (warm start); held-out scenarios: the generated `test` split (ids checked disjoint from
both). Every policy — base, warm start, each iteration — plays itself on every held-out scenario
(sampled at T=0.8 with a fixed run seed): valid-action rate, agreement rate
(Wilson), mean reward and Pareto-optimal rate, and the paired per-scenario agreement difference
against the base model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sparring.train.learning.context import Context, Played
from sparring.train.learning.registry import experiment
from sparring.train.learning.results import Experiment, Stage, mean, paired, rate

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"warm": 4, "games": 4, "heldout": 4, "iterations": 2, "tokens": 16, "max_turns": 4, "max_steps": 1,
              "keep": "all", "aborted": True},  # a tiny random model aborts every game: a pipeline check
    # full: 256 human dialogues give ~1,630 per-turn rows, one epoch of which is 408 steps of batch 4
    # (~50 s a step here under load: hours), so every SFT stage (warm start, each iteration) is capped
    # at 32 steps = 128 rows of ~390 tokens
    "full": {"warm": 256, "games": 64, "heldout": 64, "iterations": 2, "tokens": 32, "max_turns": 8, "max_steps": 32,
             "keep": "above_avg", "aborted": False},
}
MAX_LIVE = 32
GAME = {"objective": "self", "untagged_as_message": True, "prefill_proposals": True,
        "reveal_proposals": True, "remind_pool": True}


def _game(size: dict[str, Any]) -> dict[str, Any]:
    return {**GAME, "max_turns": size["max_turns"], "propose_after": size["max_turns"] // 2}


def _dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "dond_generated", "split": split, "args": {"n": max(2 * n, 60), "seed": 0}, "limit": n}


def _loop_config(ctx: Context, size: dict[str, Any], data: str) -> Any:
    from sparring.train.loop_config import LoopConfig

    sampling = {"temperature": 0.8, "max_new_tokens": size["tokens"]}
    return LoopConfig.model_validate({
        "name": "dond-selfplay", "alias": "negotiator", "method": "sft", "iterations": size["iterations"],
        "output_dir": str(ctx.out / "loops" / "dond-selfplay"), "models_file": str(ctx.models_file),
        "warm_start": {"human": "dond", "file": data, "split": "train", "limit": size["warm"]},
        "selfplay": {"game": "dond", "game_args": _game(size), "dataset": _dataset("train", size["games"]),
                     "agents": {"policy": {"role": "negotiator", "model": ctx.label, "sampling": sampling}},
                     "tournament": {"type": "self_play", "participants": ["policy"]},
                     "run": {"seed": 0, "max_live": MAX_LIVE}},
        "export": {"keep": size["keep"], "cumulative": False, "include_aborted": size["aborted"]},
        "train": {"method": "sft", "model": ctx.model, "learning_rate": 2e-4, "epochs": 1, "batch_size": 4,
                  "max_steps": size["max_steps"],
                  "max_length": 768, "lora": {"r": 8, "alpha": 16}},
        "evaluation": {"dataset": _dataset("test", size["heldout"])}})


def evaluate(ctx: Context, model: str, name: str, size: dict[str, Any]) -> tuple[dict, dict, Played]:
    cfg = {"game": "dond", "game_args": _game(size), "dataset": _dataset("test", size["heldout"]),
           "agents": {"policy": {"role": "negotiator", "model": model,
                                 "sampling": {"temperature": 0.8, "max_new_tokens": size["tokens"]}}},
           "tournament": {"type": "self_play", "participants": ["policy"]}, "run": {"seed": 0, "max_live": MAX_LIVE}}
    played = ctx.play(cfg, name)
    valid, deal, reward, pareto = [], [], [], []
    per: dict[str, float] = {}
    for r in played.records:
        m = r.outcome.metrics if r.outcome else {}
        turns, bad = int(m.get("turns") or 0), int(m.get("n_invalid_total") or 0)
        valid.append(turns / (turns + bad) if turns + bad else 0.0)
        deal.append(bool(m.get("deal")))
        rewards = list((r.outcome.rewards if r.outcome else {}).values())
        reward.append(sum(rewards) / len(rewards) if rewards else 0.0)
        pareto.append(bool(m.get("pareto_optimal")))
        per[r.instance_id] = float(bool(m.get("deal")))
    return ({"valid_action_rate": mean(valid), "agreement": rate(deal), "mean_reward": mean(reward),
             "pareto_rate": rate(pareto)}, per, played)


def dialogues(ctx: Context) -> Path:
    """The Deal or No Deal human dialogues of the warm start (not shipped: `--dond-data`,
    SPARRING_DATA_DIR or `sparring data fetch dond-dialogues`)."""
    from sparring.datafiles import resolve

    return resolve("dond-dialogues", ctx.data.get("dond-dialogues"), "--dond-data PATH")


@experiment("dond-selfplay")
def run(ctx: Context) -> Experiment:
    from sparring.train.export.human import human_sft_rows
    from sparring.train.learning.loops import run_iterations, speed, trained_tokens
    from sparring.train.loop import Loop

    size = SIZES[ctx.size]
    data = dialogues(ctx)
    start = time.perf_counter()
    loop = Loop(_loop_config(ctx, size, str(data)), "<learning suite>", console=ctx.console)
    t = time.perf_counter()
    loop.start()
    warm_s = time.perf_counter() - t
    base_m, base_per, base_played = evaluate(ctx, ctx.label, "dond-base", size)
    exp = Experiment(name="dond-selfplay", description="Deal or No Deal: SFT warm start on human dialogues, then "
                     "self-play SFT on the above-average games (lm-selfplay); held-out self-play.",
                     model=ctx.label, primary="agreement", training_ids=[], heldout_ids=sorted(base_per),
                     target="valid actions >= 0.95 and agreement >= 25 points above the base model; "
                            "each iteration not below the warm start (>= 64 held-out games)")
    exp.stages.append(Stage("base", 0, base_m, base_played.walls("heldout")))
    warm = loop.state["warm"]
    alias = ctx.register("dond-warm", warm["adapter"])
    m, per, played = evaluate(ctx, alias, "dond-warm", size)
    exp.stages.append(Stage("dond-warm", 0, m, {"train": warm_s, **played.walls("heldout")},
                            info={"rows": warm["rows"], "steps": warm["steps"], "loss": warm["loss"]}))
    exp.paired["agreement dond-warm - base"] = paired(base_per, per)
    ctx.progress(exp)
    done = run_iterations(ctx, exp, loop, "dond-selfplay", lambda a, n: evaluate(ctx, a, n, size), base_per,
                          "agreement", lambda export, train: {"rows": train["rows"], "loss": train["loss"],
                                                              "steps": train["steps"]})
    w = loop.config.warm_start
    assert w is not None and w.file is not None
    warm_rows = human_sft_rows(w.human, w.file, split=w.split, limit=w.limit)  # what loop.start trained on
    warm_tokens = trained_tokens(ctx, warm_rows, warm["steps"], loop.config.train)
    exp.speed = speed(ctx, base_played, MAX_LIVE, warm_tokens + done.train_tokens, warm_s + done.train_s)
    exp.notes.append(f"warm start: {warm['rows']} SFT rows from {size['warm']} human dialogues of data.txt "
                     "(their scenarios are human ones, not generated: disjoint from the held-out set by source)")
    exp.notes.append("speed: training = the warm start and every iteration's SFT (tokens of the rows seen ÷ "
                     "their wall time, loading included); rollout = the base model's held-out games")
    exp.wall_s = time.perf_counter() - start
    return exp
