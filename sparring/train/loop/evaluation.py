"""A loop iteration's held-out evaluation: the cross-play it plays (matchups that fit the game's
seats, under the training judges or one held-out judge) and what the loop keeps of its run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.train.loop.config import LoopConfig


def eval_plan(config: LoopConfig, k: int, seats: int, judge: str | None = None) -> dict[str, Any]:
    """Iteration k's cross-play: `ALIAS@k` against the base and `ALIAS@k-1` (and itself, SFT), on
    `evaluation.dataset`, as an experiment config without its name and models file."""
    policy = config.selfplay["agents"][config.policy_agent]
    plain = {key: v for key, v in policy.items() if key not in ("best_of_n", "model")}
    new, base, prev = f"{config.alias}@{k}", "base", f"{config.alias}@{k - 1}"
    agents = {new: {**plain, "model": new}, base: {**plain, "model": f"{config.alias}@base"}}
    others = [base]
    if k > 1 or config.warm_start:
        agents[prev] = {**plain, "model": prev}
        others.append(prev)
    if seats == 1:  # a one-player game: each model plays alone, compared by its game metrics
        matchups = [[new], *([o] for o in others)]
    else:  # the new policy in the first seat, the other model in the rest (flip swaps them)
        matchups = [[new, *[o] * (seats - 1)] for o in others]
        if config.method == "sft":
            matchups.append([new] * seats)
    sp = config.selfplay
    judges = sp.get("tournament", {}).get("judges") or []
    if judge is not None:
        judges = [judge]
        agents[judge] = {"role": "judge", **config.evaluation.heldout_judges[judge]}
    else:
        agents.update({j: sp["agents"][j] for j in judges})
    view = {"view": sp["view"]} if sp.get("view") else {}  # the held-out games in the view the policy trained in
    return {"game": sp["game"], "game_args": sp.get("game_args", {}), **view, "dataset": config.evaluation.dataset,
            "agents": agents, "tournament": {"type": "custom", "matchups": matchups, "judges": judges,
                                             "flip": config.evaluation.flip, "repeats": config.evaluation.repeats},
            "run": sp.get("run", {})}


def game_seats(config: LoopConfig, file: str) -> int:
    """How many competing seats the self-play game has (as configured by its game_args)."""
    from sparring.gameapi import GAMES

    sp = config.selfplay
    cls = GAMES.get(str(sp.get("game")))
    try:
        game = cls(cls.Config.model_validate(sp.get("game_args") or {}))
    except ValueError as e:  # pydantic's ValidationError; the play stage reports it in full
        raise SparringError(f"{file}: selfplay.game_args: {e}") from None
    return len(game.competitors())


def evaluation_summary(run_dir: str | Path, new: str, game: str) -> dict[str, Any]:
    """What the loop keeps of an evaluation run (state.json's `evaluate`), read from the run's
    records as typed results (`sparring.analysis.results`), never from its report: `new`'s win
    rate against each other agent, every agent's rating, the judge accuracy (a game that
    declares one) and the game's headline metrics per matchup, each with its interval."""
    from sparring.analysis.measures import matchup_metrics
    from sparring.analysis.results import run_results
    from sparring.records.reader import read_run

    run = read_run(run_dir, transcripts=False)
    results = run_results(run)
    out: dict[str, Any] = {"run_dir": str(run_dir), "vs": {
        other: {"win_rate": v.value, "ci": _pair(v.ci), "games": v.n} for other, v in results.vs(new).items()}}
    out["ratings"] = {p: {"rating": v.value, "ci": _pair(v.ci)} for p, v in results.rating_values().items()}
    if (judge := results.judge_accuracy(game)) is not None:
        out["judge_accuracy"] = {"accuracy": judge.value, "ci": _pair(judge.ci), "n": judge.n}
    out["games"] = {name: m.to_dict() for name, m in matchup_metrics(run.episodes + run.failures, game).items()}
    return out


def _pair(ci: tuple[float, float] | None) -> list[float | None]:
    return list(ci) if ci is not None else [None, None]
