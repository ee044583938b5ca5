"""What a debate experiment's debaters learnt, read from the held-out records: per stage, what the
policy's speeches do (length, quotes valid and invalid, a quote repeated, naming its own or the
other answer, quoting a sentence that holds its answer, the demonstrator's opening) and how each
judge rates it when it argues the correct and when it argues the wrong answer; for the final DPO
iteration, the change against the warm start paired debate by debate, and whether a gain under
the training judge holds under the judges never used in training.

The speech features are the same for every judge and never score anything (the judges do that);
the per-side judge probabilities say where a gain comes from: a judge that pays the side arguing
the wrong answer more is being argued into the wrong answer.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from sparring.learning.debate_eval import Judges, Measured
from sparring.learning.results import Experiment, mean, paired

QUOTE = re.compile(r"<(quote|invalid_quote)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
FEATURES = ("words", "valid_quotes", "invalid_quotes", "quoted_words", "repeated_quote", "names_own", "names_other",
            "own_in_quote", "other_in_quote", "opening")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 3}


def speech_features(speech: str, own: str, other: str) -> dict[str, float]:
    """Features of one marked speech (the game's `<quote>` / `<invalid_quote>` marks) by a debater
    arguing `own` against `other`."""
    mine, theirs = _words(own) - _words(other), _words(other) - _words(own)
    quotes = QUOTE.findall(speech)
    valid = [q for kind, q in quotes if kind.lower() == "quote"]
    plain = _words(QUOTE.sub(" ", speech))
    return {"words": float(len(speech.split())), "valid_quotes": float(len(valid)),
            "invalid_quotes": float(len(quotes) - len(valid)),
            "quoted_words": float(sum(len(q.split()) for _, q in quotes)),
            "repeated_quote": float(len(valid) > len({q.strip().lower() for q in valid})),
            "names_own": float(bool(mine & plain)), "names_other": float(bool(theirs & plain)),
            "own_in_quote": float(any(mine & _words(q) for q in valid)),
            "other_in_quote": float(any(theirs & _words(q) for q in valid)),
            "opening": float(speech.strip().lower().startswith("the answer is"))}


def policy_speeches(records: list[Any]) -> dict[str, dict[str, Any]]:
    """Debate key (instance/flip/seat) -> the policy's features, its side and its judge probability."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        m = r.outcome.metrics if r.outcome else {}
        seat = next((p for p, s in r.seats.items() if s.agent == "policy"), None)
        answers = list((r.instance or {}).get("answers") or [])
        index = (m.get("answers_by_player") or {}).get(seat)
        if seat is None or "probs" not in m or index is None or len(answers) != 2:
            continue
        speech = "\n".join(str((e.meta or {}).get("marked") or e.content) for e in r.events
                           if e.player == seat and e.tag == "speech")
        out[f"{r.instance_id}/{int(r.flip)}/{seat}"] = {
            "features": speech_features(speech, answers[index], answers[1 - index]),
            "side": (m.get("positions") or {}).get(seat, "?"), "prob": float(m["probs"].get(seat, 0.5))}
    return out


def stage_behaviour(by_judge: dict[str, list[Any]]) -> dict[str, float]:
    """A stage's mean features (all, and by the side argued) and each judge's mean probability for
    the policy by side."""
    out: dict[str, float] = {}
    first = next(iter(by_judge.values()))
    speeches = policy_speeches(first)
    for name in FEATURES:
        for side in ("all", "correct", "incorrect"):
            values = [s["features"][name] for s in speeches.values() if side in ("all", s["side"])]
            if values:
                out[f"{name}" if side == "all" else f"{name} ({side} side)"] = sum(values) / len(values)
    for label, records in by_judge.items():
        for side in ("correct", "incorrect"):
            probs = [s["prob"] for s in policy_speeches(records).values() if s["side"] == side]
            if probs:
                out[f"judge_prob {side} side ({label})"] = sum(probs) / len(probs)
    return out


def _per_debate(records: list[Any], name: str) -> dict[str, float]:
    return {k: (s["prob"] if name == "prob" else s["features"][name]) for k, s in policy_speeches(records).items()}


def describe_changes(exp: Experiment, measured: Measured, runs: list[str], judges: Judges) -> None:
    """Behaviours of every stage into its info (`behaviour`), the change of the final DPO
    iteration's features against the warm start paired per debate (`behaviour FEATURE FINAL - WARM`), and a note
    on what changed and whether the training judge's gain holds under the held-out judges. `runs`:
    the base, warm start and iteration run names, in that order (the stages in `exp.stages` with a
    `-base` run are named `base`)."""
    by_stage = {s.name: s for s in exp.stages}
    for run in runs:
        stage = by_stage.get("base" if run == runs[0] else run)
        if stage is not None and run in measured.records:
            stage.info["behaviour"] = stage_behaviour(measured.records[run])
            stage.metrics.update({f"{k} (policy)": mean(list(_per_debate(measured.records[run][judges.training_label],
                                                                         k).values()))
                                  for k in ("words", "invalid_quotes", "names_own", "own_in_quote")})
    warm, final = runs[1], runs[-1]
    if len(runs) < 3 or warm not in measured.records or final not in measured.records:
        return
    before, after = measured.records[warm][judges.training_label], measured.records[final][judges.training_label]
    for name in FEATURES:
        exp.paired[f"behaviour {name} {final} - {warm}"] = paired(_per_debate(before, name), _per_debate(after, name))
    exp.notes.append(_verdict(exp, measured, warm, final, judges))


def _fmt(p: dict[str, Any]) -> str:
    if not p.get("n"):
        return "n/a"
    return f"{p['mean_diff']:+.3f} [{p['mean_diff_ci_low']:+.3f}, {p['mean_diff_ci_high']:+.3f}]"


def _verdict(exp: Experiment, measured: Measured, warm: str, final: str, judges: Judges) -> str:
    """One sentence per question: what changed in the speeches, and does the gain hold."""
    changed = []
    for name in FEATURES:
        p = exp.paired.get(f"behaviour {name} {final} - {warm}") or {}
        if p.get("n") and (p["mean_diff_ci_low"] > 0 or p["mean_diff_ci_high"] < 0):
            changed.append(f"{name} {_fmt(p)}")
    labels = [judges.training_label, *(j.label for j in judges.held_out)]
    gains = {label: exp.paired.get(f"judge_prob {final} - {warm} ({label})") or {} for label in labels}
    trained = gains[judges.training_label]
    held = []
    for j in judges.held_out:
        p = gains[j.label]
        if not p.get("n"):
            continue
        word = ("holds" if p["mean_diff_ci_low"] > 0 else "reverses" if p["mean_diff_ci_high"] < 0
                else "is not shown")
        held.append(f"{j.label} {_fmt(p)}: {word}")
    sides = defaultdict(list)
    for label in labels:
        for side in ("correct", "incorrect"):
            before = _side_probs(measured.records[warm][label], side)
            after = _side_probs(measured.records[final][label], side)
            sides[label].append(f"{side} side {_fmt(paired(before, after))}")
    return (f"what {final} changed against {warm} (held-out debates, paired per debate; features whose interval "
            f"excludes 0): {', '.join(changed) or 'none'}. Judge probability, {judges.training_label} (training) "
            f"{_fmt(trained)}; " + "; ".join(held) + ". By the side the policy argued: "
            + "; ".join(f"{label}: {', '.join(v)}" for label, v in sides.items()))


def _side_probs(records: list[Any], side: str) -> dict[str, float]:
    return {k: s["prob"] for k, s in policy_speeches(records).items() if s["side"] == side}
