#!/usr/bin/env python
"""Gold-policy throughput of TextWorld cooking: expert demonstrations through the whole engine
(batched runner, simulator pool, records), in episodes/s and commands/s.

    python benchmarks/bench_textworld_gold.py [--episodes 100] [--max-live 8]

The scripted gold policy costs nothing, so this measures the simulator (a TextWorldExpress step
is a py4j round trip to a JVM, ~2 ms; a reset with its gold path ~10 ms) plus the engine. Also
prints how many simulators (JVMs) the run started: at most `--max-live`.
"""

from __future__ import annotations

import argparse
import time

from sparring.engine.play import Arena
from sparring.models.scripted import ScriptedModel


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--max-live", type=int, default=8)
    return ap


def main() -> None:
    a = build_parser().parse_args()
    config = {"name": "bench-textworld-gold", "game": "textworld_cooking", "game_args": {"max_steps": 30},
              "dataset": {"name": "cookingworld", "split": "train", "limit": a.episodes},
              "agents": {"gold": {"role": "player", "model": "gold"}},
              "tournament": {"type": "self_play", "participants": ["gold"]}, "run": {"max_live": a.max_live}}
    gold = ScriptedModel("gold", mode="callable", record_requests=False,
                         function="sparring.games.textworld_cooking.gold:gold_command")
    start = time.perf_counter()
    with Arena.from_config(config, models={"gold": gold}) as arena:
        setup = time.perf_counter() - start
        jobs = arena.jobs()
        start = time.perf_counter()
        records = arena.play(jobs)
        wall = time.perf_counter() - start
        jvms = arena.exp.game.simulators
        arena.exp.game.close()
    steps = sum(r.outcome.metrics["steps"] for r in records if r.outcome)
    solved = sum(bool(r.outcome and r.outcome.metrics["success"]) for r in records)
    print(f"setup (instances, first JVM): {setup:.1f} s")
    print(f"{len(records)} gold episodes, {solved} solved, {steps} commands in {wall:.1f} s: "
          f"{len(records) / wall:.1f} episodes/s, {steps / wall:.0f} commands/s, {jvms} simulator(s) started")


if __name__ == "__main__":
    main()
