"""The loop's greedy check on training prompts (issue #58): before a held-out game is played, the
new policy and the policy it started from each play the first `check.instances` training instances
of the self-play config greedily (no branching, no best-of-N, temperature 0), against the same
partners and judges; the policy's reward and its behaviour in the game (the game's
`hooks.behaviour`, e.g. a debater's valid quotes per speech) are compared paired per instance.

Why: DPO can fit its pairs (the chosen reply's log-ratio up, held-back pairs ranked right) while
greedy decoding on the same prompts does something else; pairs are measured on sampled replies,
the held-out games are played greedily. This reads the second on the training prompts, cheaply.
"""

from __future__ import annotations

import copy
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from sparring.train.loop.config import LoopConfig


def check_plan(config: LoopConfig, policy_alias: str) -> dict[str, Any]:
    """The self-play experiment (without its name and models file) with `policy_alias` as the
    policy, played greedily on the first `check.instances` training instances, once each."""
    assert config.check is not None
    sp = copy.deepcopy(config.selfplay)
    agent = dict(sp["agents"][config.policy_agent])
    agent.pop("best_of_n", None)
    agent["model"] = policy_alias
    agent["sampling"] = {**(agent.get("sampling") or {}), "temperature": 0.0}
    sp["agents"][config.policy_agent] = agent
    dataset = dict(sp.get("dataset") or {})
    limit = dataset.get("limit")
    dataset["limit"] = min(int(limit), config.check.instances) if limit else config.check.instances
    sp["dataset"] = dataset
    tournament = dict(sp.get("tournament") or {})
    tournament.pop("repeats", None)
    sp["tournament"] = tournament
    sp.pop("branch", None)
    return sp


def check_summary(run_dir: str | Path, policy_agent: str, game: str) -> dict[str, Any]:
    """The policy's mean reward and behaviour over the check's games, and per instance (for the
    paired comparison): {"games", "means": {name: value}, "per_instance": {name: {instance: value}}}."""
    from sparring.gameapi import GAMES
    from sparring.records.reader import read_run

    behaviour = GAMES.get(game).hooks.behaviour if game in GAMES else None
    run = read_run(run_dir, transcripts=False)
    per: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    games = 0
    for rec in run.episodes:
        if rec.outcome is None:
            continue
        seats = [p for p, s in rec.seats.items() if s.agent == policy_agent]
        if not seats:
            continue
        games += 1
        for player in seats:
            reward = rec.outcome.rewards.get(player)
            if reward is not None:
                per["reward"][rec.instance_id].append(float(reward))
            for name, value in (behaviour(rec.outcome.metrics, player) if behaviour else {}).items():
                if value is not None and not math.isnan(float(value)):
                    per[name][rec.instance_id].append(float(value))
    per_instance = {name: {i: sum(v) / len(v) for i, v in sorted(by.items())} for name, by in sorted(per.items())}
    means = {name: _mean([v for vs in per[name].values() for v in vs]) for name in per_instance}
    return {"run_dir": str(run_dir), "games": games, "means": means, "per_instance": per_instance}


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, float]]:
    """after − before per measure, paired per instance, with a bootstrap 95% interval."""
    from sparring.stats.stats_tests import paired_test

    out: dict[str, dict[str, float]] = {}
    for name in sorted(after["per_instance"], key=lambda n: (n != "reward", n)):  # the reward first
        now = after["per_instance"][name]
        then = before["per_instance"].get(name) or {}
        diffs = [now[i] - then[i] for i in now if i in then]
        if diffs:
            t = paired_test(diffs)
            out[name] = {"before": before["means"][name], "after": after["means"][name], "diff": t["mean_diff"],
                         "ci_low": t["mean_diff_ci_low"], "ci_high": t["mean_diff_ci_high"], "n": t["n"]}
    return out


def check_line(k: int, games: int, diffs: dict[str, dict[str, float]]) -> str:
    """One printed line: each measure before → after (difference and its interval)."""
    parts = [f"{name} {d['before']:.3f} → {d['after']:.3f} ({d['diff']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}])"
             for name, d in diffs.items()]
    return f"iteration {k} check (greedy, {games} games on training prompts): " + ("; ".join(parts) or "nothing measured")


def check_stage(loop: Any, k: int) -> dict[str, Any] | None:
    """Iteration k's check stage of `loop` (a `Loop`): ALIAS@k and ALIAS@k−1 (its games reused from
    iteration k−1's check) play the training prompts; paired differences printed and returned."""
    config = loop.config
    if config.check is None:
        return None
    game = str(config.selfplay["game"])

    def played(j: int) -> dict[str, Any]:
        return check_summary(loop._run(loop.check_experiment(j), f"check-{j}"), config.policy_agent, game)

    earlier = (loop._it(k - 1).get("check") or {}).get("after") if k > 1 else None
    before = earlier or played(k - 1)
    after = played(k)
    diffs = compare(before, after)
    loop.console.print(check_line(k, after["games"], diffs))
    return {"before": before, "after": after, "diff": diffs}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan
