"""Experiment: expert iteration in TextWorld cooking (one room) from the start on 128 gold games.

Nine GRPO designs from SFT starts gained no held-out game (`textworld-turn-rl`'s page): a group's
commands were ranked right in their own state, yet the updates moved the policy where no single
state's ranking looks (the appliance it names whatever the recipe says; refused commands repeated,
which the credit left at ~0). The one
signal every run agreed on is that more winning games as demonstrations make a better policy
(`textworld-sft-data`: 0.62 on 128 gold games, 0.89 on 256). Expert iteration (ReST / RAFT,
filtered self-imitation) learns from reward that way, without the gold policy: the policy plays
new training worlds at temperature 0.7, the games it won with every command accepted become SFT
rows (a refused command would be trained as a reply to imitate), and SFT continues the adapter on
them; `ei_rounds` rounds, each on worlds no earlier round or gold game used, each round's policy
measured on the held-out games. The start (its adapter reused when `textworld-turn-rl-state-128`
ran into the same output), the held-out dev-fold games and every measurement are
`textworld-turn-rl-state-128`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sparring.learning.context import Context
from sparring.learning.experiments import textworld_easy_rl as easy
from sparring.learning.experiments import textworld_turn_rl as turn
from sparring.learning.experiments.textworld_sft import episode_rows, game_config, sft
from sparring.learning.experiments.textworld_turn_rl_state_128 import NAME as STATE128
from sparring.learning.experiments.textworld_turn_rl_state_128 import SIZES as STATE128_SIZES
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, paired

NAME = "textworld-expert-iteration"
# full: 2 rounds of 128 new training worlds each (one game a world at temperature 0.7, ~6 min), SFT
# one epoch over the clean wins (~5 s a row), the held-out games after each round (~3 min): ~38 min
# with textworld-turn-rl-state-128's start reused, ~50 with it fitted here
SIZES: dict[str, dict[str, Any]] = {
    "quick": {**STATE128_SIZES["quick"], "ei_games": 2, "ei_rounds": 1, "ei_temperature": 0.7, "ei_keep": "clean"},
    "full": {**STATE128_SIZES["full"], "ei_games": 128, "ei_rounds": 2, "ei_temperature": 0.7, "ei_keep": "clean"},
}


def clean_wins(records: list[Any]) -> list[Any]:
    """The games won with every command accepted: demonstrations to imitate as they are."""
    return [r for r in records if r.outcome and r.outcome.metrics.get("success")
            and all(e.meta.get("valid") for e in r.events if e.tag == "command")]


# what a round trains on: the games won with every command accepted, or (the control,
# `textworld-expert-iteration-all`) every game it played
KEEP: dict[str, Callable[[list[Any]], list[Any]]] = {"clean": clean_wins, "all": list}


@experiment(NAME)
def run(ctx: Context) -> Experiment:
    return run_rounds(ctx, NAME, SIZES[ctx.size])


def run_rounds(ctx: Context, name: str, size: dict[str, Any]) -> Experiment:
    """The experiment `name`: the start, then `size["ei_rounds"]` rounds, each SFT on what
    `KEEP[size["ei_keep"]]` keeps of the round's games. The games are played under this
    experiment's run names whatever `name` is, so an experiment run into the same output (the
    control) trains on the very games expert iteration played."""
    begin = time.perf_counter()
    keep = KEEP[size["ei_keep"]]
    gold, rows, adapter, alias, sft_s, loss = turn.sft_start(ctx, name, size, f"{STATE128}-start")
    start_m = easy.measure(ctx, alias, f"{name}-start", size)
    kept_as = ("the games it won with every command accepted" if size["ei_keep"] == "clean" else
               "every game it played, won or not (a control)")
    exp = Experiment(name=name, description="TextWorld cooking in one-room, one-ingredient worlds: expert iteration "
                     f"from an SFT start on {size['train']} gold games; each round the policy plays new training "
                     f"worlds at temperature {size['ei_temperature']:g} and SFT continues on {kept_as}; the start "
                     "and each round's policy play the same held-out dev-fold games greedily.",
                     model=ctx.label, primary="success", training_ids=sorted({r.instance_id for r in gold.records}),
                     heldout_ids=start_m.instances,
                     target="paired success over the SFT start with its interval above 0")
    exp.stages.append(Stage("sft-start", 0, start_m.metrics, {"gold_demos": gold.seconds, "train": sft_s,
                                                              **start_m.walls},
                            info={"adapter": adapter, "reused": not sft_s, "rows": len(rows), "loss": loss,
                                  **start_m.info}))
    ctx.progress(exp)
    sampling = {"temperature": size["ei_temperature"], "max_new_tokens": size["tokens"], "stop": ["\n"]}
    for k in range(1, size["ei_rounds"] + 1):
        config = game_config(alias, "train", size["ei_games"], size, sampling)
        # new worlds each round: after the gold games' and every earlier round's
        config["dataset"]["args"]["offset"] = size["train"] + (k - 1) * size["ei_games"]
        played = ctx.play(config, f"{NAME}-round{k}-games")
        exp.training_ids = sorted(set(exp.training_ids) | {r.instance_id for r in played.records})
        exp.__post_init__()  # the round's worlds are disjoint from the held-out ones (checked)
        won = [r for r in played.records if r.outcome and r.outcome.metrics.get("success")]
        clean = clean_wins(played.records)
        # the quick size's tiny model wins nothing: every game is kept, to run the pipeline end to end
        kept = keep(played.records) or (played.records if ctx.size == "quick" else [])
        if not kept:
            exp.notes.append(f"round {k}: nothing to train on ({size['ei_keep']}) in {len(played.records)} games; stopped")
            break
        t = time.perf_counter()
        result, _ = sft(ctx, episode_rows(kept), size, k, len(kept), f"{name}-round{k}", adapter)
        train_s = time.perf_counter() - t
        adapter, alias = str(result.adapter), ctx.register(f"{name}-round{k}", result.adapter)
        measured = easy.measure(ctx, alias, f"{name}-round{k}", size)
        exp.stages.append(Stage(f"round-{k}", k, measured.metrics, {"play_training": played.seconds,
                                                                     "train": train_s, **measured.walls},
                                info={"games": len(played.records), "won": len(won), "clean_wins": len(clean),
                                      "training_success": round(len(won) / len(played.records), 4),
                                      "rows": len(kept), "loss": result.loss, "adapter": adapter, **measured.info}))
        for label, per in measured.per.items():
            exp.paired[f"{label} round-{k} - start"] = paired(start_m.per[label], per)
        exp.notes.append(f"round {k}: {len(played.records)} training worlds (offset "
                         f"{config['dataset']['args']['offset']}) at temperature {size['ei_temperature']:g}, "
                         f"{len(won)} won, {len(clean)} of them with every command accepted: SFT one epoch on "
                         f"{len(kept)} rows ({size['ei_keep']}), continuing the adapter")
        ctx.progress(exp)
    exp.notes.insert(0, f"start: {'reused' if not sft_s else 'trained'} ({len(rows)} SFT rows from "
                        f"{len(gold.records)} gold games)")
    exp.notes.append("held-out success / score: " + ", ".join(
        f"{s.name} {s.metrics['success'].value:.2f} / {s.metrics['score'].value:.2f}" for s in exp.stages))
    exp.wall_s = time.perf_counter() - begin
    return exp
