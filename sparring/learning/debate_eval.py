"""Held-out measurement of the debate experiments, whichever judge trains: the trained debater
against the base model on every held-out question (both answer assignments, both seat orders,
greedy), judged by the training judge and re-judged (the same speeches, replayed) by every judge
never used in training; and the NYU judge-accuracy table by format.

The judges are a parameter (`Judges`): `debate-dpo` trains against the quote judge and holds out
the evidence judge, `debate-dpo-evidence` trains against the evidence judge and holds out the
quote judge and the proof judge (`sparring/games/debate/scripted_judge.py`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.results import mean, rate

FORMATS = ("debate", "consultancy", "double_consultancy")
GAME = {"format": "debate", "rounds": 1}
# games in flight: 32 fills the bundled model's batch (max_batch_size 32); measured on the 96 held-out
# base debates alone on 2 cores: 61 s at 32 against 76 s at 16, the same 96 transcripts
MAX_LIVE = 32
DATA_ARGS = {"people": 2, "filler_sentences": 0}


@dataclass(frozen=True)
class HeldOutJudge:
    key: str    # run-name suffix of its re-judged runs
    label: str  # how its metrics and paired comparisons are named: "win_rate (LABEL)"
    model: str  # a model name of the suite's models file


@dataclass(frozen=True)
class Judges:
    """The judge a debate experiment trains against, and the judges it never trains against."""

    training: str                        # model name
    training_label: str                  # paired comparisons under it end in "(LABEL)"
    held_out: tuple[HeldOutJudge, ...]


@dataclass
class Measured:
    """What every held-out evaluation of a run left: per judge label, stage -> instance -> the
    policy's mean judge probability; per stage, its debates under each judge (label -> records;
    the training judge's under `Judges.training_label`)."""

    per: dict[str, dict[str, dict[str, float]]] = field(default_factory=lambda: defaultdict(dict))
    records: dict[str, dict[str, list[Any]]] = field(default_factory=dict)


def p_correct(record: Any) -> float | None:
    """The judge's probability of the correct answer, as the debate game's outcome states it (its
    headline metric `p_correct`); None for an episode without a verdict."""
    value = (record.outcome.metrics if record.outcome is not None else {}).get("p_correct")
    return None if value is None else float(value)


def dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "generated", "split": split, "limit": n, "args": DATA_ARGS}


def evaluate(ctx: Context, policy: str, name: str, size: dict[str, Any], judges: Judges,
             measured: Measured | None = None, best_of: int = 1) -> tuple[dict, dict, Played]:
    """Policy vs base on every held-out debate: both answer assignments (`flip`) and both seat
    orders (the first speaker has an edge under the quote judge), greedy, under the training judge;
    every debate re-judged by each held-out judge (metrics `KEY (LABEL)`). Returns the metrics, the
    per-instance judge probability under the training judge and the run; `measured` collects the
    per-instance values and records under every judge. `best_of` > 1: the policy samples that many
    speeches (temperature 0.9, as in training play) and keeps the one the training judge scores
    highest (NYU's inference-time Best-of-N); the base stays greedy."""
    sampling = {"temperature": 0.0, "max_new_tokens": size["tokens"]}
    policy_agent: dict[str, Any] = {"role": "debater", "model": policy, "sampling": sampling}
    if best_of > 1:
        policy_agent = {**policy_agent, "sampling": {**sampling, "temperature": 0.9},
                        "best_of_n": {"n": best_of}}
    cfg = {"game": "debate", "view": "rendered", "game_args": GAME,
           "dataset": dataset("test", size["heldout"]),
           "agents": {"policy": policy_agent,
                      "base": {"role": "debater", "model": ctx.label, "sampling": sampling},
                      "judge": {"role": "judge", "model": judges.training}},
           "tournament": {"type": "custom", "matchups": [["policy", "base"], ["base", "policy"]], "judges": ["judge"],
                          "flip": True},
           "run": {"seed": 0, "max_live": MAX_LIVE}}
    played = ctx.play(cfg, name)
    metrics, per = policy_metrics(played.records)
    records = {judges.training_label: played.records}
    if measured is not None:
        measured.per[judges.training_label][name] = per
    for judge in judges.held_out:  # every result also under the judges that were not used to train
        held = rejudge(ctx, played, judge.model, f"{name}-{judge.key}")
        held_m, held_per = policy_metrics(held.records)
        records[judge.label] = held.records
        if measured is not None:
            measured.per[judge.label][name] = held_per
        metrics.update({f"{k} ({judge.label})": v for k, v in held_m.items() if k != "valid_quotes"})
    if measured is not None:
        measured.records[name] = records
    return metrics, per, played


def policy_metrics(records: list[Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """The policy's win rate (a tie counts half), mean judge probability and valid quotes per
    speech; and its mean judge probability per instance (for pairing)."""
    wins, probs, quotes = [], [], []
    per: dict[str, list[float]] = defaultdict(list)
    for r in records:
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
    return metrics, {k: sum(v) / len(v) for k, v in per.items()}


def rejudge(ctx: Context, played: Played, judge: str, name: str) -> Played:
    """The same debates (speeches replayed from the stored run) judged by `judge`: a `replicate`
    tournament, so nothing is generated again."""
    return ctx.play({"agents": {"judge": {"role": "judge", "model": judge}},
                     "tournament": {"type": "replicate", "source_run": str(played.run_dir), "judges": ["judge"]},
                     "run": {"seed": 0, "max_live": MAX_LIVE}}, name)


def judge_accuracy(ctx: Context, policy: str, tag: str, size: dict[str, Any], judges: Judges,
                   runs: str = "debate") -> dict[str, dict[str, Any]]:
    """The NYU table's row for `policy`: in debate (it argues both sides), consultancy (it is the
    consultant, assigned the correct answer half the time: both sides of every question) and
    double consultancy, the judge's accuracy (P(correct) > 0.5; a tie counts half) and mean
    P(correct), under the training judge ("training judge") and each held-out judge (its label);
    per (question, side) values for pairing. Format -> {metrics, per, played}."""
    sampling = {"temperature": 0.0, "max_new_tokens": size["tokens"]}
    out: dict[str, dict[str, Any]] = {}
    for fmt in FORMATS:
        cfg = {"game": "debate", "view": "rendered", "game_args": {**GAME, "format": fmt},
               "dataset": dataset("test", size["accuracy"]),
               "agents": {"policy": {"role": "debater", "model": policy, "sampling": sampling},
                          "judge": {"role": "judge", "model": judges.training}},
               "tournament": {"type": "self_play", "participants": ["policy"], "judges": ["judge"], "flip": True},
               "run": {"seed": 0, "max_live": MAX_LIVE}}
        name = f"{runs}-accuracy-{tag}-{fmt}"
        played = ctx.play(cfg, name)
        by_judge = {"training judge": played.records}
        for judge in judges.held_out:
            by_judge[judge.label] = rejudge(ctx, played, judge.model, f"{name}-{judge.key}").records
        metrics: dict[str, Any] = {}
        per: dict[str, dict[str, float]] = {}
        for label, records in by_judge.items():
            ps = {f"{r.instance_id}/{int(r.flip)}": p for r in records if (p := p_correct(r)) is not None}
            metrics[f"accuracy ({label})"] = rate([1.0 if p > 0.5 else 0.5 if p == 0.5 else 0.0 for p in ps.values()])
            metrics[f"p_correct ({label})"] = mean(list(ps.values()))
            per[label] = ps
        out[fmt] = {"metrics": metrics, "per": per, "played": played}
    return out
