"""Synthetic run directories for the web tests and benchmarks/bench_web.py: debate-shaped records
(a story shown to each debater, speeches, a judge's verdict) written through the normal RunStore."""

from __future__ import annotations

import random
from pathlib import Path

from sparring.engine.config import ExperimentConfig, open_store
from sparring.gameapi.game import Event, Outcome
from sparring.records.record import CallRecord, EpisodeRecord, SeatRecord
from sparring.types import Completion, Message

WORDS = ("the surveyor walked past a goose and a dog near the old mill while the river rose slowly "
         "and the owner of the house counted his books by candle light").split()
AGENTS = ("plain", "quoting", "stubborn")


def story(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def record(i: int, rng: random.Random, *, story_words: int = 200, experiment: str = "synthetic",
           speech: str | None = None, status: str = "complete") -> EpisodeRecord:
    a, b = rng.choice(AGENTS), rng.choice(AGENTS)
    text = story(rng, story_words)
    seats = {"Debater_A": SeatRecord(agent=a, model=f"model-{a}", role="debater"),
             "Debater_B": SeatRecord(agent=b, model=f"model-{b}", role="debater"),
             "Judge": SeatRecord(agent="judge", model="model-judge", role="judge")}
    speeches = {p: speech or f"{p} argues from the story: {story(rng, 30)}" for p in ("Debater_A", "Debater_B")}
    calls = [CallRecord(player=p, tag="speech", model=seats[p].model, op="generate",
                        messages=[Message(role="system", content=f"You are {p}. Story: {text}"),
                                  Message(role="user", content="Give your opening speech.")],
                        completions=[Completion(text=speeches[p])]) for p in ("Debater_A", "Debater_B")]
    p_a = rng.random()
    judge_msgs = [Message(role="system", content="Decide which answer is correct. You have not read the story."),
                  Message(role="user", content="\n\n".join(f"{p}: {s}" for p, s in speeches.items()))]
    calls.append(CallRecord(player="Judge", tag="verdict", model="model-judge", op="score", messages=judge_msgs,
                            options=[" A", " B"], logprobs=[max(-30.0, _log(p_a)), max(-30.0, _log(1 - p_a))]))
    events = [Event(index=k, player=p, tag="speech", content=s) for k, (p, s) in enumerate(speeches.items())]
    events.append(Event(index=2, player="Judge", tag="verdict", content=f"Debater_A: {p_a:.3f}"))
    events.append(Event(index=3, player="Debater_A", tag="note", content="hidden note for A", visible_to=["Debater_A"]))
    correct = "Debater_A" if i % 2 == 0 else "Debater_B"
    p_correct = p_a if correct == "Debater_A" else 1 - p_a
    outcome = Outcome(rewards={"Debater_A": p_a, "Debater_B": 1 - p_a, "Judge": p_correct},
                      winner="Debater_A" if p_a > 0.5 else "Debater_B", reason=None,
                      metrics={"format": "debate", "p_correct": p_correct, "judge_correct": p_correct > 0.5,
                               "probs": {"Debater_A": p_a, "Debater_B": 1 - p_a}, "correct_side": correct})
    return EpisodeRecord(id=f"ep{i:06d}", experiment=experiment, game="debate", instance_id=f"q{i % 97:03d}",
                         seats=seats, seed=i, matchup=f"{a} vs {b}", status=status,  # type: ignore[arg-type]
                         outcome=None if status == "failed" else outcome, events=events, calls=calls,
                         error="RuntimeError: boom" if status == "failed" else None, duration_s=rng.random())


def _log(p: float) -> float:
    import math

    return math.log(max(p, 1e-12))


def write_run(run_dir: Path, n: int, *, story_words: int = 200, failed: int = 0, seed: int = 0,
              speech: str | None = None, status: str = "complete") -> Path:
    """A run directory with `n` done episodes and `failed` failures, written by RunStore."""
    rng = random.Random(seed)
    agents = {a: {"role": "debater", "model": f"model-{a}"} for a in AGENTS}
    agents["judge"] = {"role": "judge", "model": "model-judge"}
    cfg = ExperimentConfig(name=run_dir.name, game="debate", agents=agents)
    store = open_store(run_dir, cfg)
    for i in range(n):
        store.add_done(record(i, rng, story_words=story_words, experiment=run_dir.name, speech=speech))
    for j in range(failed):
        store.add_failed(record(n + j, rng, story_words=story_words, experiment=run_dir.name, status="failed"))
    store.write_manifest(status=status, schedule={"total": n + failed, "in_shard": n + failed})
    store.commit()
    store.close(status=status)
    return run_dir
