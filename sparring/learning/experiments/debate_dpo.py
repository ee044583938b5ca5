"""Experiment 3: debate, iterative DPO (Arnesen et al.) against a deterministic scripted judge
(`sparring/games/debate/scripted_judge.py`: its preference is known and learnable), every result
also under judges never used in training. One pipeline, three arms (`Arm`): `debate-dpo` trains
against the quote judge and holds out the evidence judge; `debate-dpo-evidence`
(`debate_dpo_evidence.py`) trains against the evidence judge and holds out the quote and proof
judges; `debate-dpo-contrast` (`debate_dpo_contrast.py`, issue #58) adds contrastive pairs, RPO,
the control arms (`debate_controls.py`) and the base model as a held-out judge.

Training debates are the generated dataset's `train` split, held-out ones its `test` split (ids
checked disjoint). The bundled model never writes a `<quote>` on its own, so the judge's main reward
would never be sampled: first a warm start, SFT on the speeches of a scripted demonstrator
(`sparring/games/debate/demonstrator.py`: names its answer, quotes the story sentence that mentions
it) on the training debates — Arnesen et al. also start DPO from an SFT'd debater. Then each
iteration the policy plays branched debates (self-play, or against the base model) judged by the
training judge; sibling continuations become DPO pairs, the speech the judge preferred as chosen
(the existing loop, `sparring.train.loop.driver`, started from the warm adapter). The held-out evaluation
(`debate_eval.py`) plays every instance four times (both answer assignments, both seat orders)
trained-vs-base, greedy: win rate of the trained debater (ties count half, Wilson interval), its
mean judge probability and the paired per-instance difference against the base playing itself in
the same seats, under the training judge and, re-judged (the same speeches, replayed), under every
held-out judge, so a gain that only pleases the training judge shows as such. What each stage's
debaters do differently (quotes, naming the answer, length: `debate_behaviour.py`) is computed
from the held-out records. `debate-dpo` adds the NYU measurement: the judge's accuracy in debate,
consultancy and double consultancy with the base, the warm-started and the final debaters.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from sparring.gameapi.splits import check_disjoint
from sparring.learning.context import Context, Played
from sparring.learning.debate_eval import (
    FORMATS,
    GAME,
    MAX_LIVE,
    HeldOutJudge,
    Judges,
    Measured,
    dataset,
    evaluate,
    judge_accuracy,
)
from sparring.learning.registry import experiment
from sparring.learning.results import Experiment, Stage, paired

SIZES: dict[str, dict[str, Any]] = {
    # quick: a tiny random model's sibling speeches score nearly alike, so no near-tie is dropped
    "quick": {"train": 2, "heldout": 2, "iterations": 2, "tokens": 16, "max_pairs": 2, "max_length": 1024, "min_gap": 0.0,
              "max_steps": 1, "demo_steps": 1, "accuracy": 2},
    # full: 24 held-out questions x 2 answer assignments x 2 seat orders = 96 debates per evaluation;
    # the warm start: one epoch (32 steps of 4) of the demonstrator's 128 speeches (~400 tokens each,
    # ~15 min here); 12 steps taught "The answer is X." but no quote: 0 valid in 256 sampled speeches.
    # DPO: 48 training questions (96 branched debates, one pair each), the 48 best-separated pairs, one
    # epoch (24 steps of 2) per iteration; the judge-accuracy table: 24 held-out questions x 2 sides
    "full": {"train": 48, "heldout": 24, "iterations": 2, "tokens": 48, "max_pairs": 48, "max_length": 1024, "min_gap": 0.05,
             "max_steps": -1, "demo_steps": 32, "accuracy": 24},
}
# The DPO loss, changed after measuring why 16 steps of sigmoid DPO (beta 0.1) left the warm start
# where it was: the loss stayed at ln 2 and the chosen speeches (the quoting ones) were ~2x longer
# and less likely (summed log-prob -12.7 vs -7.0), so the summed log-ratios the sigmoid loss
# compares are dominated by length. IPO compares length-averaged log-ratios with a squared loss
# towards a fixed margin 1/(2 beta) = 1 (beta 0.5): the gradient does not vanish near ln 2, and
# length is not what it learns.
DPO = {"loss_type": ["ipo"], "beta": 0.5}
HELDOUT_JUDGE = "evidence-judge"  # never used in training (sparring/games/debate/scripted_judge.py)


@dataclass(frozen=True)
class Arm:
    """One debate DPO experiment: which judge trains, which judges only measure, how DPO trains."""

    name: str                      # the experiment; its DPO iterations are stages NAME-1, NAME-2, ...
    runs: str                      # prefix of its run names; its warm start is stage RUNS-warm
    judges: Judges
    sizes: dict[str, dict[str, Any]]
    dpo: dict[str, Any]            # DPOSettings of every iteration
    train: dict[str, Any]          # the iterations' other TrainSettings (learning_rate, epochs, batch_size)
    opponent: bool = False         # False: branched self-play; True: the policy against the base model, both seats
    accuracy_table: bool = True    # the NYU judge-accuracy table (3 formats x base, warm, final)
    measure_fit: bool = False      # score each iteration's own pairs under its adapter and its reference
    k: int = 2                     # sampled speeches per branch point
    export: dict[str, Any] = field(default_factory=dict)  # ExportSettings beside target/min_gap/max_pairs
    controls: tuple[str, ...] = ()  # the control arms run in the experiment (debate_controls.ARMS): extra-sft,
                                    # rs-sft (SFT on iteration 1's chosen speeches), best-of-n (Best-of-4)
    model_judge: bool = False      # the base model itself as one more held-out judge (reads no story)
    check: bool = False            # the loop's greedy check on `size["check"]` training questions (loop/check.py)
    temperature: float = 0.9       # the policy's sampling temperature in the branched debates
    description: str = ""
    target: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


DEBATE_DPO = Arm(
    name="debate-dpo", runs="debate",
    judges=Judges("quote-judge", "quote judge", (HeldOutJudge("evidence", "held-out judge", HELDOUT_JUDGE),)),
    sizes=SIZES, dpo=DPO, train={"learning_rate": 2e-4, "epochs": 1, "batch_size": 2},
    description="Debate: SFT warm start on a scripted demonstrator's quoting speeches, then iterative DPO from "
                "branched self-play judged by the scripted quote judge (hard labels: the sibling the judge "
                "preferred); held-out debates with both answer assignments and both seat orders, trained vs base, "
                "greedy.",
    target="the second DPO iteration above the warm start (paired interval above 0) under the training judge "
           "and not below it under the held-out judge; the judge-accuracy table before and after",
    notes=(f"the held-out judge ({HELDOUT_JUDGE}) re-judges the same debates (speeches replayed): it credits only "
           "quotes that tie the answer to the question",))


def demonstrations(ctx: Context, size: dict[str, Any], arm: Arm = DEBATE_DPO) -> Played:
    """The scripted demonstrator's debates on the training questions (what the warm start and the
    extra-SFT control train on); a stored run is resumed, not replayed."""
    return ctx.play({"game": "debate", "view": "rendered", "game_args": GAME, "dataset": dataset("train", size["train"]),
                     "agents": {"policy": {"role": "debater", "model": "debate-demonstrator"},
                                "judge": {"role": "judge", "model": arm.judges.training}},
                     "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"],
                                    "flip": True},
                     "run": {"seed": 0, "max_live": MAX_LIVE}}, f"{arm.runs}-demonstrations")


def warm_start(ctx: Context, size: dict[str, Any], arm: Arm = DEBATE_DPO) -> tuple[str, dict[str, Any], Played]:
    """SFT on the scripted demonstrator's speeches in the training debates: the adapter, the
    training result's facts and the demonstration run."""
    from sparring.learning.debate_controls import demo_sft_settings
    from sparring.train.export import ExportFilters, sft_rows
    from sparring.train.trainers import train_sft

    demos = demonstrations(ctx, size, arm)
    rows = sft_rows(demos.records, ExportFilters(agent="policy"))
    result = train_sft(rows, demo_sft_settings(ctx, size, size["demo_steps"]), ctx.out / "adapters" / f"{arm.runs}-warm")
    quotes = [float(q.get("n_valid") or 0) for r in demos.records if r.outcome
              for q in (r.outcome.metrics.get("quote_stats") or {}).values()]
    return str(result.adapter), {"rows": result.rows, "steps": result.steps, "loss": result.loss,
                                 "demo_valid_quotes": sum(quotes) / max(1, len(quotes))}, demos


def loop_config(ctx: Context, size: dict[str, Any], warm: str, arm: Arm = DEBATE_DPO) -> Any:
    from sparring.train.loop.config import LoopConfig

    agents: dict[str, Any] = {
        "policy": {"role": "debater", "model": ctx.label,
                   "sampling": {"temperature": arm.temperature, "max_new_tokens": size["tokens"]}},
        "judge": {"role": "judge", "model": arm.judges.training}}
    tournament: dict[str, Any] = {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True}
    if arm.opponent:  # the base model, greedy as in the held-out debates; only the policy's turns branch
        agents["opponent"] = {"role": "debater", "model": ctx.label,
                              "sampling": {"temperature": 0.0, "max_new_tokens": size["tokens"]}}
        tournament = {"type": "custom", "matchups": [["policy", "opponent"], ["opponent", "policy"]],
                      "judges": ["judge"], "flip": True}
    return LoopConfig.model_validate({
        "name": arm.name, "alias": "debater", "method": "dpo", "iterations": size["iterations"],
        "output_dir": str(ctx.out / "loops" / arm.name), "models_file": str(ctx.models_file),
        "policy_agent": "policy", "warm_start": {"adapter": warm}, "pair_fit": arm.measure_fit,
        "check": {"instances": size["check"]} if arm.check else None,
        "selfplay": {"game": "debate", "view": "rendered", "game_args": GAME,
                     "dataset": dataset("train", size["train"]),
                     "agents": agents, "tournament": tournament,
                     "branch": {"target": "policy", "k": arm.k, "mode": "half", "depth": 1},
                     "run": {"seed": 0, "max_live": MAX_LIVE}},
        # hard labels (standard DPO): the quote judge's probabilities of two sibling speeches differ by
        # ~0.2-0.6, so soft targets sigmoid(difference) sit at 0.55-0.65 and the loss starts at its
        # floor (measured: loss 0.693, no held-out change after one iteration); near-ties dropped
        "export": {"target": "binary", "min_gap": size["min_gap"], "max_pairs": size["max_pairs"], **arm.export},
        "train": {"method": "dpo", "model": ctx.model, **arm.train, "max_steps": size["max_steps"],
                  "max_length": size["max_length"], "lora": {"r": 8, "alpha": 16}, "dpo": arm.dpo},
        "evaluation": {"dataset": dataset("test", size["heldout"]),
                       "heldout_judges": {j.key: {"model": j.model} for j in arm.judges.held_out}}})


@experiment("debate-dpo")
def run(ctx: Context) -> Experiment:
    return run_arm(ctx, DEBATE_DPO)


def arm_judges(ctx: Context, arm: Arm) -> Judges:
    """The arm's judges, with the base model as one more held-out judge where the arm asks for it
    (it judges the transcript: no judge's view holds the story)."""
    if not arm.model_judge:
        return arm.judges
    return Judges(arm.judges.training, arm.judges.training_label,
                  (*arm.judges.held_out, HeldOutJudge("model", "base model judge, held out", ctx.label)))


def run_arm(ctx: Context, arm: Arm) -> Experiment:
    """The whole experiment of one arm: base, warm start, the DPO iterations, each measured on the
    held-out debates under every judge; pairs fitted and behaviours per stage in the stages' info."""
    from sparring.learning.debate_behaviour import describe_changes
    from sparring.learning.loops import run_iterations, speed
    from sparring.train.export import ExportFilters, sft_rows
    from sparring.train.loop.driver import Loop

    size = arm.sizes[ctx.size]
    judges = arm_judges(ctx, arm)
    start = time.perf_counter()
    measured = Measured()
    base_m, base_per, base_played = evaluate(ctx, ctx.label, f"{arm.runs}-base", size, judges, measured)
    t = time.perf_counter()
    adapter, warm, demos = warm_start(ctx, size, arm)
    warm_s = time.perf_counter() - t
    exp = _new(ctx, arm, {r.instance_id for r in demos.records}, sorted(base_per))
    exp.stages.append(Stage("base", 0, base_m, base_played.walls("heldout")))
    warm_stage = f"{arm.runs}-warm"
    warm_alias = ctx.register(warm_stage, adapter)
    m, warm_per, played = evaluate(ctx, warm_alias, warm_stage, size, judges, measured)
    exp.stages.append(Stage(warm_stage, 0, m, {"train": warm_s, **played.walls("heldout")}, info=warm))
    labels = [judges.training_label, *(j.label for j in judges.held_out)]
    for label in labels:
        exp.paired[f"judge_prob {warm_stage} - base ({label})"] = paired(
            measured.per[label][f"{arm.runs}-base"], measured.per[label][warm_stage])
    ctx.progress(exp)
    loop = Loop(loop_config(ctx, size, adapter, arm), "<learning suite>", console=ctx.console)
    loop.start()

    def info(export: dict[str, Any], train: dict[str, Any]) -> dict[str, Any]:
        fit = (train.get("fit") or {}).get("trained") or {}  # the loop's pair fit (`pair_fit: measure_fit`)
        return {"pairs": export["pairs"], "loss": train["loss"], "steps": train["steps"], **_dpo_info(export, train),
                **{f"fit/{k}": v for k, v in fit.items()}}

    done = run_iterations(ctx, exp, loop, arm.name, lambda a, n: evaluate(ctx, a, n, size, judges, measured),
                          base_per, "judge_prob", info, suffix=f" ({judges.training_label})")
    iterations = list(done.per)
    for name in iterations:  # what DPO added on top of the warm start, under every judge
        for label in labels:
            exp.paired[f"judge_prob {name} - {warm_stage} ({label})"] = paired(
                measured.per[label][warm_stage], measured.per[label][name])
    for before, after in itertools.pairwise(iterations):  # does iterating help
        for label in labels:
            exp.paired[f"judge_prob {after} - {before} ({label})"] = paired(
                measured.per[label][before], measured.per[label][after])
    stages = [f"{arm.runs}-base", warm_stage, *iterations]
    describe_changes(exp, measured, stages, judges)
    if arm.controls:
        run_arms(ctx, exp, size, arm, judges, measured, loop, sft_rows(demos.records, ExportFilters(agent="policy")),
                 adapter, warm_alias, iterations[-1], arm.controls)
    if arm.accuracy_table:
        table = play_accuracy_table(ctx, size, arm, judges, {"base": ctx.label, "warm": warm_alias, "final": done.final})
        add_accuracy_table(exp, table, judges, size)
    exp.speed = speed(ctx, base_played, MAX_LIVE, done.train_tokens, done.train_s)
    exp.notes.append(f"warm start: {warm['rows']} SFT rows (the scripted demonstrator's speeches in "
                     f"{len(demos.records)} training debates; {warm['demo_valid_quotes']:.2f} valid quotes per "
                     f"speech), {warm['steps']} steps; the DPO iterations start from it")
    exp.notes.append(f"DPO: {arm.dpo['loss_type']} beta {arm.dpo['beta']}, learning rate {arm.train['learning_rate']}, "
                     f"{arm.train['epochs']} epoch(s) of batch {arm.train['batch_size']} per iteration; training judge "
                     f"{judges.training}, "
                     + ("the policy against the base model in both seats" if arm.opponent else "branched self-play")
                     + ("; fit/*: each iteration's adapter against its reference on its own pairs" if arm.measure_fit
                        else ""))
    exp.notes.extend(arm.notes)
    exp.notes.append("speed: training = every iteration's DPO (both sequences of each pair seen ÷ the train "
                     "stages' wall time, loading included); rollout = the base model's held-out debates "
                     f"({judges.training_label})")
    exp.wall_s = time.perf_counter() - start
    return exp


def run_arms(ctx: Context, exp: Experiment, size: dict[str, Any], arm: Arm, judges: Judges, measured: Measured,
             loop: Any, demo_rows: list[dict[str, Any]], warm: str, warm_alias: str, final: str,
             only: tuple[str, ...]) -> None:
    """The control arms named in `only` (`debate_controls.py`), each paired with the warm start and
    with the final DPO iteration under every judge (`measured` holds both stages' debates)."""
    from sparring.learning.debate_behaviour import stage_behaviour
    from sparring.learning.debate_controls import run_controls
    from sparring.train.trainers import read_rows

    its = loop.state["iterations"]
    dpo_steps = sum(int(its[str(k)]["train"]["steps"]) for k in range(1, loop.config.iterations + 1))
    stages = run_controls(ctx, exp, size, warm, warm_alias, demo_rows, read_rows(its["1"]["export"]["path"]),
                          dpo_steps, lambda a, n, b: evaluate(ctx, a, n, size, judges, measured, best_of=b), arm.runs,
                          only=only)
    by_stage = {s.name: s for s in exp.stages}
    warm_stage = f"{arm.runs}-warm"
    for name in stages.values():
        by_stage[name].info["behaviour"] = stage_behaviour(measured.records[name])
        for label in [judges.training_label, *(j.label for j in judges.held_out)]:
            exp.paired[f"judge_prob {name} - {warm_stage} ({label})"] = paired(
                measured.per[label][warm_stage], measured.per[label][name])
            exp.paired[f"judge_prob {final} - {name} ({label})"] = paired(
                measured.per[label][name], measured.per[label][final])


def play_accuracy_table(ctx: Context, size: dict[str, Any], arm: Arm, judges: Judges,
                        policies: dict[str, str]) -> dict[str, dict[str, dict[str, Any]]]:
    """The NYU table's games: each policy (tag -> model) in every format (`judge_accuracy`)."""
    return {tag: judge_accuracy(ctx, alias, tag, size, judges, arm.runs) for tag, alias in policies.items()}


def accuracy_ids(table: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The questions the table's games were played on (held out: checked against training)."""
    return sorted({r.instance_id for rows in table.values() for row in rows.values() for r in row["played"].records})


def add_accuracy_table(exp: Experiment, table: dict[str, dict[str, dict[str, Any]]], judges: Judges,
                       size: dict[str, Any]) -> None:
    """The NYU table as stages and paired rows: judge accuracy by format, before (base, warm start)
    and after (final) training."""
    check_disjoint(exp.name, exp.training_ids, accuracy_ids(table))
    for tag, rows in table.items():
        for fmt, row in rows.items():
            exp.stages.append(Stage(f"accuracy {tag} {fmt}", 0, row["metrics"], row["played"].walls("heldout"),
                                    seed=200, info={"format": fmt, "debaters": tag}))
    for fmt in FORMATS:
        for label in ("training judge", *(j.label for j in judges.held_out)):
            for before in ("base", "warm"):
                exp.paired[f"p_correct {fmt} final - {before} ({label})"] = paired(
                    table[before][fmt]["per"][label], table["final"][fmt]["per"][label])
    exp.notes.append("seed 200 rows: the judge-accuracy table — the policy in each format, both sides of "
                     f"{size['accuracy']} held-out questions; accuracy counts a tie as half")


def _dpo_info(export: dict[str, Any], train: dict[str, Any]) -> dict[str, Any]:
    """What the iteration's pairs looked like and where DPO's own metrics ended."""
    metrics = train.get("metrics") or {}
    return {**{k: export[k] for k in ("chosen_words", "rejected_words", "value_gap") if k in export},
            **{k: metrics[k] for k in ("rewards/accuracies", "rewards/margins", "rewards/chosen", "rewards/rejected",
                                       "logps/chosen", "logps/rejected") if k in metrics}}


def _new(ctx: Context, arm: Arm, training: set[str], heldout: list[str]) -> Experiment:
    return Experiment(name=arm.name, description=arm.description, model=ctx.label, primary="win_rate",
                      training_ids=sorted(training), heldout_ids=heldout, target=arm.target)
