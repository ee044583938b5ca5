"""Deal or No Deal, lm-selfplay — a warm start on the human dialogues (`data.txt`), then self-play
filtered-SFT iterations (the existing loop, `sparring.train.loop.driver`), in two experiments:

- `dond-selfplay`: lm-selfplay's recipe as its code defines it (`utils.concatenate`): after each
  round of self-play a player's side of a game is kept when its score is above the mean score of
  every player of that round (`keep: above_avg`), and the next SFT trains on those sides;
- `dond-selfplay-mutual`: the same from the same warm start, except that a deal worth nothing to
  one side counts as no gain for either (`require: [scored_both]`): capitulations are not learnt.

Training scenarios: the generated DoND `train` split (self-play) plus the human dialogues' own
scenarios (warm start); held-out scenarios: the generated `test` split (ids checked disjoint from
both). Every policy plays itself on every held-out scenario (T=0.8, fixed seeds); the warm start
and each arm's last iteration also play the base model and the scripted `fair-negotiator`, each
scenario once in each seat (`dond_eval.py`). Agreement counts capitulations as success, so the
verdict rests on deals where both sides score and on points against the fixed partners.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.learning.context import Context
from sparring.learning.dond_eval import MAX_LIVE, dataset, game_args, measure, walls
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, paired

SIZES: dict[str, dict[str, Any]] = {
    "quick": {"warm": 4, "games": 4, "heldout": 2, "partner_heldout": 1, "iterations": 2, "tokens": 16, "max_errors": 2,
              "max_turns": 4, "max_steps": 1, "keep": "all", "aborted": True},  # a tiny random model aborts every game
    # full: 256 human dialogues give ~1,630 per-turn rows, one epoch of which is 408 steps of batch 4
    # (~50 s a step here under load: hours), so every SFT stage (warm start, each iteration) is capped
    # at 32 steps = 128 rows of ~390 tokens
    "full": {"warm": 256, "games": 64, "heldout": 64, "partner_heldout": 32, "iterations": 2, "tokens": 32,
             "max_turns": 8, "max_steps": 32, "keep": "above_avg", "aborted": False},
}
WARM_STAGE = "dond-warm"
TARGET = ("deals where both sides score in self-play above the warm start (paired interval above 0), and the "
          "policy's points against the fixed partners not below the warm start's (64 held-out games each)")


def loop_config(ctx: Context, size: dict[str, Any], name: str, warm: dict[str, Any], require: list[str]) -> Any:
    from sparring.train.loop.config import LoopConfig

    sampling = {"temperature": 0.8, "max_new_tokens": size["tokens"]}
    return LoopConfig.model_validate({
        "name": name, "alias": "negotiator", "method": "sft", "iterations": size["iterations"],
        "output_dir": str(ctx.out / "loops" / name), "models_file": str(ctx.models_file), "warm_start": warm,
        "selfplay": {"game": "dond", "view": "rendered", "game_args": game_args(size), "dataset": dataset("train", size["games"]),
                     "agents": {"policy": {"role": "negotiator", "model": ctx.label, "sampling": sampling}},
                     "tournament": {"type": "self_play", "participants": ["policy"]},
                     "run": {"seed": 0, "max_live": MAX_LIVE}},
        "export": {"keep": size["keep"], "cumulative": False, "include_aborted": size["aborted"],
                   "require": require if size["keep"] != "all" else []},
        "train": {"method": "sft", "model": ctx.model, "learning_rate": 2e-4, "epochs": 1, "batch_size": 4,
                  "max_steps": size["max_steps"],
                  "max_length": 768, "lora": {"r": 8, "alpha": 16}},
        "evaluation": {"dataset": dataset("test", size["heldout"])}})


def dialogues(ctx: Context) -> Path:
    """The Deal or No Deal human dialogues of the warm start (not shipped: `--dond-data`,
    SPARRING_DATA_DIR or `sparring data fetch dond-dialogues`)."""
    from sparring.datafiles import resolve

    return resolve("dond-dialogues", ctx.data.get("dond-dialogues"), "--dond-data PATH")


Measure = Callable[[str, str, bool], tuple[dict[str, Any], dict[str, dict[str, float]], list[Any], dict[str, Any]]]


def suite_measure(ctx: Context, size: dict[str, Any]) -> Measure:
    """`measure` on the generated test split, with both fixed partners when asked."""
    return lambda alias, name, partners: measure(ctx, alias, name, size, partners)


def _stage(ctx: Context, exp: Experiment, measured: Measure, alias: str, name: str, step: int, partners: bool,
           wall: dict[str, float], info: dict[str, Any]) -> dict[str, dict[str, float]]:
    metrics, per, runs, extra = measured(alias, name, partners)
    exp.stages.append(Stage(name, step, metrics, {**wall, **walls(runs)}, info={**info, **extra}))
    ctx.progress(exp)
    return per


def iterate(ctx: Context, exp: Experiment, loop: Any, prefix: str, size: dict[str, Any],
            start: dict[str, dict[str, float]], measured: Measure | None = None,
            ) -> tuple[float, float, dict[str, dict[str, float]]]:
    """Every iteration of `loop`: play, export, train, register, measure; returns (training
    seconds, training tokens, the last iteration's per-instance values). The last iteration also
    plays the fixed partners, and is compared (paired) with the start on each measure the start
    has. `measured(alias, stage name, last)`: the experiment's own measure (default `measure`, the
    partners at the last iteration only)."""
    from sparring.learning.loops import drive, trained_tokens
    from sparring.train.trainers import read_rows

    measured = measured or suite_measure(ctx, size)

    train_s = tokens = 0.0
    per: dict[str, dict[str, float]] = {}
    training = set(exp.training_ids)
    for k in range(1, loop.config.iterations + 1):
        try:
            wall, results = drive(loop, k)
        except SparringError as e:  # e.g. no game passed the filter: the arm ends here, with the reason
            exp.notes.append(f"{prefix} iteration {k} stopped: {e}")
            break
        training |= set(results["export"]["instances"])
        exp.training_ids = sorted(training)
        exp.__post_init__()  # re-checks disjointness
        train = loop.state["iterations"][str(k)]["train"]
        name = f"{prefix}-{k}"
        alias = ctx.register(name, train["adapter"])
        last = k == loop.config.iterations
        per = _stage(ctx, exp, measured, alias, name, k, last, wall,
                     {"rows": train["rows"], "loss": train["loss"], "steps": train["steps"],
                      "kept_sides": results["export"]["rows"], "games": results["export"]["episodes"]})
        train_s += wall["train"]
        tokens += trained_tokens(ctx, read_rows(results["export"]["path"]), train["steps"], loop.config.train)
        exp.paired[f"deals where both score {name} - warm start"] = paired(start["mutual"], per["mutual"])
    for key, label in (("vs_fair", "points vs fair-negotiator"), ("vs_base", "points vs the base model"),
                       ("contexts mutual", "selfplay.txt deals where both score"),
                       ("contexts vs_fair", "selfplay.txt points vs fair-negotiator")):
        if key in per and key in start:
            exp.paired[f"{label} {prefix}-{loop.config.iterations} - warm start"] = paired(start[key], per[key])
    return train_s, tokens, per


def warm_start_loop(ctx: Context, size: dict[str, Any], data: Path) -> tuple[Any, float]:
    """lm-selfplay's warm start (SFT on the human dialogues) through the loop; (loop, seconds)."""
    from sparring.train.loop.driver import Loop

    warm = {"human": "dond", "file": str(data), "split": "train", "limit": size["warm"]}
    loop = Loop(loop_config(ctx, size, "dond-selfplay", warm, []), "<learning suite>", console=ctx.console)
    t = time.perf_counter()
    loop.start()
    return loop, time.perf_counter() - t


@experiment("dond-selfplay")
def run(ctx: Context) -> Experiment:
    from sparring.learning.loops import speed, trained_tokens
    from sparring.train.export.human import human_sft_rows

    size = SIZES[ctx.size]
    data = dialogues(ctx)
    start = time.perf_counter()
    loop, warm_s = warm_start_loop(ctx, size, data)
    base_m, base_per, base_runs, base_info = measure(ctx, ctx.label, "dond-base", size, partners=False)
    exp = Experiment(name="dond-selfplay", description="Deal or No Deal: SFT warm start on human dialogues, then "
                     "self-play SFT on the sides of games that scored above the round's average (lm-selfplay); "
                     "held-out self-play and games against fixed partners.",
                     model=ctx.label, primary="mutual_deal_rate", training_ids=[],
                     heldout_ids=sorted(base_per["mutual"]), target=TARGET)
    exp.stages.append(Stage("base", 0, base_m, walls(base_runs), info=base_info))
    warm = loop.state["warm"]
    alias = ctx.register(WARM_STAGE, warm["adapter"])
    warm_per = _stage(ctx, exp, suite_measure(ctx, size), alias, WARM_STAGE, 0, True, {"train": warm_s},
                      {"rows": warm["rows"], "steps": warm["steps"], "loss": warm["loss"]})
    exp.paired["deals where both score dond-warm - base"] = paired(base_per["mutual"], warm_per["mutual"])
    train_s, tokens, _ = iterate(ctx, exp, loop, "dond-selfplay", size, warm_per)
    w = loop.config.warm_start
    assert w is not None and w.file is not None
    warm_rows = human_sft_rows(w.human, w.file, split=w.split, limit=w.limit)  # what loop.start trained on
    warm_tokens = trained_tokens(ctx, warm_rows, warm["steps"], loop.config.train)
    exp.speed = speed(ctx, base_runs[0], MAX_LIVE, warm_tokens + tokens, warm_s + train_s)
    exp.notes.append(f"warm start: {warm['rows']} SFT rows from {size['warm']} human dialogues of data.txt "
                     "(their scenarios are human ones, not generated: disjoint from the held-out set by source)")
    exp.notes.append("filter: lm-selfplay's above_avg — a player's side of a game is kept when its score is above the "
                     "mean of every player's score in that round of self-play (its utils.concatenate)")
    exp.notes.append("speed: training = the warm start and every iteration's SFT (tokens of the rows seen ÷ "
                     "their wall time, loading included); rollout = the base model's held-out games")
    exp.wall_s = time.perf_counter() - start
    return exp
