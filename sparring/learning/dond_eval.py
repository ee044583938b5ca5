"""How the Deal or No Deal experiments measure a policy on held-out scenarios: in self-play, and
against fixed partners (the base model, the scripted `fair-negotiator`) in both seats.

Agreement and mean reward cannot tell negotiation from capitulation: a deal worth 0 points to one
side gives that side exactly what walking away gives, yet counts as a deal and adds half a pool to
the mean. So every evaluation also reports the share of games ending in a deal where **both sides
score** (`mutual_deal_rate`), the points of the lower and the higher side in deals, and the
distribution of splits (`Stage.info["splits"]`: "low-high" -> deals); against a fixed partner, the
policy's own points and the partner's, paired per (scenario, seat).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sparring.learning.context import Context, Played
from sparring.learning.results import Estimate, mean, rate

MAX_LIVE = 32
GAME = {"objective": "self", "untagged_as_message": True, "prefill_proposals": True,
        "reveal_proposals": True, "remind_pool": True}
FAIR = "fair-negotiator"  # the shipped scripted partner (sparring/games/negotiation/partner.py)


def game_args(size: dict[str, Any]) -> dict[str, Any]:
    """The game's arguments at this size (`max_errors`: the quick size's tiny random model writes
    nothing valid, so its games abort after fewer retries)."""
    return {**GAME, "max_turns": size["max_turns"], "propose_after": size["max_turns"] // 2,
            **({"max_errors": size["max_errors"]} if "max_errors" in size else {})}


def dataset(split: str, n: int) -> dict[str, Any]:
    return {"name": "dond_generated", "split": split, "args": {"n": max(2 * n, 60), "seed": 0}, "limit": n}


def _sampling(size: dict[str, Any]) -> dict[str, Any]:
    return {"temperature": 0.8, "max_new_tokens": size["tokens"]}


def _deal_sides(records: list[Any]) -> tuple[list[float], list[float]]:
    """The points of the lower and of the higher side in every deal (from the outcome metrics the
    game records: `deal`, `points`; the game's own report draws the same from them)."""
    low, high = [], []
    for r in records:
        m = r.outcome.metrics if r.outcome else {}
        if m.get("deal"):
            pts = sorted(float(v) for v in (m.get("points") or {}).values())
            low.append(pts[0])
            high.append(pts[-1])
    return low, high


def _splits(records: list[Any]) -> dict[str, int]:
    """Deals per split "low-high", most frequent first."""
    counts: dict[str, int] = {}
    for low, high in zip(*_deal_sides(records), strict=True):
        key = f"{int(low)}-{int(high)}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def contexts(n: int, path: str | Path) -> dict[str, Any]:
    """lm-selfplay's own scenarios (`selfplay.txt`), one game per scenario, their `test` split: the
    scenario-level hash split every DoND source shares, so no scenario of it is in any `train`
    split (the generated scenarios, the human dialogues)."""
    return {"name": "dond_selfplay", "split": "test", "limit": n, "args": {"dedupe": True, "path": str(path)}}


def contexts_file(ctx: Context) -> Path:
    """Where `selfplay.txt` is: `--dond-contexts`, else beside the dialogues given with `--dond-data`,
    else $SPARRING_DATA_DIR or `sparring data fetch dond-contexts` (a clear error if nowhere)."""
    from sparring.datafiles import resolve

    given = ctx.data.get("dond-contexts")
    dialogues = ctx.data.get("dond-dialogues")
    if not given and dialogues:
        folder = Path(dialogues) if Path(dialogues).is_dir() else Path(dialogues).parent
        given = str(folder) if (folder / "selfplay.txt").is_file() else None
    return resolve("dond-contexts", given, "--dond-contexts PATH")


def side_points(records: list[Any]) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each seat's points in every game, 0 without a deal ({player: points a game}), and per game
    the lower side's points (what the side that gave more kept)."""
    seats: dict[str, list[float]] = {}
    low: dict[str, float] = {}
    for r in records:
        m = r.outcome.metrics if r.outcome else {}
        points = m.get("points") or {}
        got = {p: float(points.get(p, 0)) if m.get("deal") else 0.0 for p in sorted(r.seats)}
        for p, v in got.items():
            seats.setdefault(p, []).append(v)
        low[r.instance_id] = min(got.values()) if got else 0.0
    return seats, low


def selfplay(ctx: Context, model: str, name: str, size: dict[str, Any],
             data: dict[str, Any] | None = None) -> tuple[dict[str, Estimate], dict, Played]:
    """The policy against itself on the held-out scenarios (`data`, default the generated test
    split): (metrics, per-scenario deal where both score, the run). Metrics: valid actions,
    agreement, deals where both score, mean reward, Pareto rate, each side's points in deals, each
    seat's mean points and the lower side's (0 without a deal); the split distribution goes in
    `info`. The game is played in `size`'s `view` (default rendered)."""
    cfg = {"game": "dond", "view": size.get("view", "rendered"), "game_args": game_args(size),
           "dataset": data or dataset("test", size["heldout"]),
           "agents": {"policy": {"role": "negotiator", "model": model, "sampling": _sampling(size)}},
           "tournament": {"type": "self_play", "participants": ["policy"]}, "run": {"seed": 0, "max_live": MAX_LIVE}}
    played = ctx.play(cfg, name)
    valid, deal, mutual, reward, pareto = [], [], [], [], []
    per: dict[str, float] = {}
    for r in played.records:
        m = r.outcome.metrics if r.outcome else {}
        turns, bad = int(m.get("turns") or 0), int(m.get("n_invalid_total") or 0)
        valid.append(turns / (turns + bad) if turns + bad else 0.0)
        deal.append(bool(m.get("deal")))
        mutual.append(bool(m.get("scored_both")))
        rewards = list((r.outcome.rewards if r.outcome else {}).values())
        reward.append(sum(rewards) / len(rewards) if rewards else 0.0)
        pareto.append(bool(m.get("pareto_optimal")))
        per[r.instance_id] = float(bool(m.get("scored_both")))
    low, high = _deal_sides(played.records)
    seats, lower = side_points(played.records)
    return ({"valid_action_rate": mean(valid), "agreement": rate(deal), "mutual_deal_rate": rate(mutual),
             "mean_reward": mean(reward), "pareto_rate": rate(pareto), "deal_points_low": mean(low),
             "deal_points_high": mean(high), "lower_side_points": mean(list(lower.values())),
             **{f"points_{p.lower()}": mean(v) for p, v in seats.items()}}, per, played)


def against(ctx: Context, model: str, partner: str, name: str, size: dict[str, Any],
            data: dict[str, Any] | None = None) -> tuple[dict, dict, Played]:
    """The policy against a fixed `partner` (a model alias), each held-out scenario (`data`, default
    the generated test split) once in each seat, in `size`'s `view` (default rendered): (metrics
    prefixed `vs_<partner>_`, per (scenario, seat) the policy's points, the run)."""
    n = size["partner_heldout"]
    cfg = {"game": "dond", "view": size.get("view", "rendered"), "game_args": game_args(size),
           "dataset": data or dataset("test", n),
           "agents": {"policy": {"role": "negotiator", "model": model, "sampling": _sampling(size)},
                      "partner": {"role": "negotiator", "model": partner,
                                  "sampling": _sampling(size)}},
           "tournament": {"type": "custom", "matchups": [["policy", "partner"], ["partner", "policy"]]},
           "run": {"seed": 0, "max_live": MAX_LIVE}}
    played = ctx.play(cfg, name)
    deal, mutual, own, theirs, valid = [], [], [], [], []
    per: dict[str, float] = {}
    for r in played.records:
        m = r.outcome.metrics if r.outcome else {}
        me = next(p for p, s in r.seats.items() if s.agent == "policy")
        other = next(p for p in r.seats if p != me)
        points = m.get("points") or {}
        deal.append(bool(m.get("deal")))
        mutual.append(bool(m.get("scored_both")))
        own.append(float(points.get(me, 0)) if m.get("deal") else 0.0)
        theirs.append(float(points.get(other, 0)) if m.get("deal") else 0.0)
        bad = int((m.get("n_invalid") or {}).get(me, 0))
        mine = sum(1 for c in r.calls if c.player == me and c.op == "generate" and not c.rejected)
        valid.append(mine / (mine + bad) if mine + bad else 0.0)
        per[f"{r.instance_id}/{me}"] = own[-1]
    key = "fair" if partner == FAIR else "base"
    return ({f"vs_{key}_agreement": rate(deal), f"vs_{key}_mutual_deal_rate": rate(mutual),
             f"vs_{key}_points": mean(own), f"vs_{key}_partner_points": mean(theirs),
             f"vs_{key}_valid_action_rate": mean(valid)}, per, played)


def measure(ctx: Context, model: str, name: str, size: dict[str, Any], partners: bool | Sequence[str],
            selfplay_data: dict[str, Any] | None = None, partner_data: dict[str, Any] | None = None,
            partner_suffix: str = "",
            ) -> tuple[dict[str, Estimate], dict[str, dict[str, float]], list[Played], dict[str, Any]]:
    """Self-play and fixed partners (`partners`: True for both, `fair-negotiator` and the base model
    `ctx.label`; or the aliases to play), on the generated test split or the given datasets:
    (metrics, per-instance values by comparison — `mutual` in self-play, `lower_side` the lower
    side's points there, `vs_fair` / `vs_base` the policy's points —, the runs, info with the split
    distributions). The partner runs are named `NAME-vs-fair` / `NAME-vs-base` + `partner_suffix`
    (a stored run of the same name and another size is refused by the run store)."""
    metrics, per, played = selfplay(ctx, model, name, size, selfplay_data)
    pers = {"mutual": per, "lower_side": side_points(played.records)[1]}
    runs = [played]
    info: dict[str, Any] = {"splits": _splits(played.records)}
    chosen = partners if not isinstance(partners, bool) else ((FAIR, ctx.label) if partners else ())
    for partner in chosen:
        key = "fair" if partner == FAIR else "base"
        m, p, run = against(ctx, model, partner, f"{name}-vs-{key}{partner_suffix}", size, partner_data)
        metrics.update(m)
        pers[f"vs_{key}"] = p
        runs.append(run)
        info[f"splits_vs_{key}"] = _splits(run.records)
    return metrics, pers, runs, info


def walls(runs: list[Played]) -> dict[str, float]:
    """Load and play seconds of a stage's evaluation runs, summed."""
    out: dict[str, float] = {}
    for run in runs:
        for k, v in run.walls("heldout").items():
            out[k] = out.get(k, 0.0) + v
    return out
