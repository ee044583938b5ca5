"""Experiment 3: debate, iterative DPO (Arnesen et al.) — first against the deterministic scripted
quote judge (`sparring/games/debate/scripted_judge.py`: its preference is known and learnable),
then the final policy judged by the base model itself.

Training debates are the generated dataset's `train` split, held-out ones its `test` split (ids
checked disjoint). The bundled model never writes a `<quote>` on its own, so the judge's main reward
would never be sampled: first a warm start, SFT on the speeches of a scripted demonstrator
(`sparring/games/debate/demonstrator.py`: names its answer, quotes the story sentence that mentions
it) on the training debates — Arnesen et al. also start DPO from an SFT'd debater. Then each
iteration the policy plays branched self-play debates judged by the quote judge; sibling
continuations become DPO pairs, the speech the judge preferred as chosen (the existing loop,
`sparring.train.loop`, started from the warm adapter). The held-out evaluation plays every instance four times
(both answer assignments, both seat orders) trained-vs-base, greedy: win rate of the trained
debater under the quote judge (ties count half, Wilson interval), its mean judge probability and
the paired per-instance difference against the base playing itself in the same seats.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from sparring.train.learning.context import Context, Played
from sparring.train.learning.registry import experiment
from sparring.train.learning.results import Experiment, Stage, mean, paired, rate

SIZES: dict[str, dict[str, Any]] = {
    # quick: a tiny random model's sibling speeches score nearly alike, so no near-tie is dropped
    "quick": {"train": 2, "heldout": 2, "iterations": 2, "tokens": 16, "max_pairs": 2, "max_length": 1024, "min_gap": 0.0,
              "max_steps": 1, "demo_steps": 1},
    # full: 24 held-out questions x 2 answer assignments x 2 seat orders = 96 debates per evaluation
    # the warm start: one epoch (32 steps of 4) of the demonstrator's 128 speeches (~400 tokens each,
    # ~15 min here); 12 steps taught "The answer is X." but no quote: 0 valid in 256 sampled speeches
    "full": {"train": 32, "heldout": 24, "iterations": 2, "tokens": 48, "max_pairs": 32, "max_length": 1024, "min_gap": 0.05,
             "max_steps": -1, "demo_steps": 32},
}
GAME = {"format": "debate", "rounds": 1}
MAX_LIVE = 16
DATA_ARGS = {"people": 2, "filler_sentences": 0}


def _dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "generated", "split": split, "limit": n, "args": DATA_ARGS}


def warm_start(ctx: Context, size: dict[str, Any]) -> tuple[str, dict[str, Any], Played]:
    """SFT on the scripted demonstrator's speeches in the training debates: the adapter, the
    training result's facts and the demonstration run."""
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.export import ExportFilters, sft_rows
    from sparring.train.trainers import train_sft

    demos = ctx.play({"game": "debate", "game_args": GAME, "dataset": _dataset("train", size["train"]),
                      "agents": {"policy": {"role": "debater", "model": "debate-demonstrator"},
                                 "judge": {"role": "judge", "model": "quote-judge"}},
                      "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"],
                                     "flip": True},
                      "run": {"seed": 0, "max_live": MAX_LIVE}}, "debate-demonstrations")
    rows = sft_rows(demos.records, ExportFilters(agent="policy"))
    settings = TrainSettings(model=ctx.model, method="sft", learning_rate=5e-4, max_steps=size["demo_steps"],
                             batch_size=4, max_length=size["max_length"], lora=LoraSettings(r=8, alpha=16))
    result = train_sft(rows, settings, ctx.out / "adapters" / "debate-warm")
    quotes = [float(q.get("n_valid") or 0) for r in demos.records if r.outcome
              for q in (r.outcome.metrics.get("quote_stats") or {}).values()]
    return str(result.adapter), {"rows": result.rows, "steps": result.steps, "loss": result.loss,
                                 "demo_valid_quotes": sum(quotes) / max(1, len(quotes))}, demos


def _loop_config(ctx: Context, size: dict[str, Any], warm: str) -> Any:
    from sparring.train.loop_config import LoopConfig

    return LoopConfig.model_validate({
        "name": "debate-dpo", "alias": "debater", "method": "dpo", "iterations": size["iterations"],
        "output_dir": str(ctx.out / "loops" / "debate-dpo"), "models_file": str(ctx.models_file),
        "policy_agent": "policy", "warm_start": {"adapter": warm},
        "selfplay": {"game": "debate", "game_args": GAME,
                     "dataset": _dataset("train", size["train"]),
                     "agents": {"policy": {"role": "debater", "model": ctx.label,
                                           "sampling": {"temperature": 0.9, "max_new_tokens": size["tokens"]}},
                                "judge": {"role": "judge", "model": "quote-judge"}},
                     "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True},
                     "branch": {"target": "policy", "k": 2, "mode": "half", "depth": 1},
                     "run": {"seed": 0, "max_live": MAX_LIVE}},
        # hard labels (standard DPO): the quote judge's probabilities of two sibling speeches differ by
        # ~0.2-0.6, so soft targets sigmoid(difference) sit at 0.55-0.65 and the loss starts at its
        # floor (measured: loss 0.693, no held-out change after one iteration); near-ties dropped
        "export": {"target": "binary", "min_gap": size["min_gap"], "max_pairs": size["max_pairs"]},
        "train": {"method": "dpo", "model": ctx.model, "learning_rate": 2e-4, "epochs": 1, "batch_size": 2,
                  "max_steps": size["max_steps"],
                  "max_length": size["max_length"], "lora": {"r": 8, "alpha": 16},
                  "dpo": {"beta": 0.1}},
        "evaluation": {"dataset": _dataset("test", size["heldout"])}})


def evaluate(ctx: Context, policy: str, judge: str, name: str, size: dict[str, Any]) -> tuple[dict, dict, Played]:
    """Policy vs base on every held-out debate: both answer assignments (`flip`) and both seat
    orders (the first speaker has an edge under the quote judge), greedy."""
    sampling = {"temperature": 0.0, "max_new_tokens": size["tokens"]}
    cfg = {"game": "debate", "game_args": GAME,
           "dataset": _dataset("test", size["heldout"]),
           "agents": {"policy": {"role": "debater", "model": policy, "sampling": sampling},
                      "base": {"role": "debater", "model": ctx.label, "sampling": sampling},
                      "judge": {"role": "judge", "model": judge}},
           "tournament": {"type": "custom", "matchups": [["policy", "base"], ["base", "policy"]], "judges": ["judge"],
                          "flip": True},
           "run": {"seed": 0, "max_live": MAX_LIVE}}
    played = ctx.play(cfg, name)
    wins, probs, quotes = [], [], []
    per: dict[str, list[float]] = defaultdict(list)
    for r in played.records:
        m = r.outcome.metrics if r.outcome else {}
        seat = next((p for p, s in r.seats.items() if s.agent == "policy"), None)
        if seat is None or "probs" not in m:
            continue
        p = float(m["probs"].get(seat, 0.5))
        probs.append(p)
        per[r.instance_id].append(p)
        wins.append(0.5 if m.get("tie") else float(m.get("winner") == seat))
        q = (m.get("quote_stats") or {}).get(seat) or {}
        quotes.append(float(q.get("n_valid") or 0))
    metrics = {"win_rate": rate(wins), "judge_prob": mean(probs), "valid_quotes": mean(quotes)}
    return metrics, {k: sum(v) / len(v) for k, v in per.items()}, played


@experiment("debate-dpo")
def run(ctx: Context) -> Experiment:
    from sparring.train.learning.loops import run_iterations, speed
    from sparring.train.loop import Loop

    size = SIZES[ctx.size]
    start = time.perf_counter()
    base_m, base_per, base_played = evaluate(ctx, ctx.label, "quote-judge", "debate-base", size)
    t = time.perf_counter()
    adapter, warm, demos = warm_start(ctx, size)
    warm_s = time.perf_counter() - t
    exp = _new(ctx, {r.instance_id for r in demos.records}, sorted(base_per))
    exp.stages.append(Stage("base", 0, base_m, base_played.walls("heldout")))
    warm_alias = ctx.register("debate-warm", adapter)
    m, warm_per, played = evaluate(ctx, warm_alias, "quote-judge", "debate-warm", size)
    exp.stages.append(Stage("debate-warm", 0, m, {"train": warm_s, **played.walls("heldout")}, info=warm))
    exp.paired["judge_prob debate-warm - base (quote judge)"] = paired(base_per, warm_per)
    ctx.progress(exp)
    loop = Loop(_loop_config(ctx, size, adapter), "<learning suite>", console=ctx.console)
    loop.start()
    done = run_iterations(ctx, exp, loop, "debate-dpo", lambda a, n: evaluate(ctx, a, "quote-judge", n, size),
                          base_per, "judge_prob",
                          lambda export, train: {"pairs": export["pairs"], "loss": train["loss"],
                                                 "steps": train["steps"]},
                          suffix=" (quote judge)")
    for name, per in done.per.items():  # what DPO added on top of the warm start
        exp.paired[f"judge_prob {name} - debate-warm (quote judge)"] = paired(warm_per, per)
    final = done.final
    # the bundled model as judge: mean judge probability of the final policy, paired over instances
    m, per, played = evaluate(ctx, final, ctx.label, "debate-final-model-judge", size)
    b, bper, bplayed = evaluate(ctx, ctx.label, ctx.label, "debate-base-model-judge", size)
    exp.stages.append(Stage("base, model judge", 0, b, bplayed.walls("heldout"), seed=100,
                            info={"judge": ctx.label}))
    ctx.progress(exp)
    exp.stages.append(Stage(f"{final.split('@')[1]}, model judge", size["iterations"], m, played.walls("heldout"),
                            seed=100, info={"judge": ctx.label}))
    exp.paired["judge_prob final - base (model judge)"] = paired(bper, per)
    exp.speed = speed(ctx, base_played, MAX_LIVE, done.train_tokens, done.train_s)
    exp.notes.append(f"warm start: {warm['rows']} SFT rows (the scripted demonstrator's speeches in "
                     f"{len(demos.records)} training debates; {warm['demo_valid_quotes']:.2f} valid quotes per "
                     f"speech), {warm['steps']} steps; the DPO iterations start from it")
    exp.notes.append("seed 100 rows: judged by the base model itself (mean judge probability of the "
                     "policy's side); the other rows: the scripted quote judge")
    exp.notes.append("speed: training = every iteration's DPO (both sequences of each pair seen ÷ the train "
                     "stages' wall time, loading included); rollout = the base model's held-out debates "
                     "(quote judge)")
    exp.wall_s = time.perf_counter() - start
    return exp


def _new(ctx: Context, training: set[str], heldout: list[str]) -> Experiment:
    return Experiment(
        name="debate-dpo", description="Debate: SFT warm start on a scripted demonstrator's quoting speeches, "
        "then iterative DPO from branched self-play judged by the "
        "scripted quote judge (hard labels: the sibling the judge preferred); held-out debates with both answer "
        "assignments and both seat orders, trained vs base, greedy.", model=ctx.label,
        primary="win_rate", training_ids=sorted(training), heldout_ids=heldout,
        target="win rate vs base >= 0.70 under the quote judge on >= 64 held-out flipped debates, "
               "interval excluding 0.5, within 2 iterations")
