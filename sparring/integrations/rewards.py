"""A seat's reward and metrics from an episode record: what the engine scored, per player.

Both integrations hand these to the other engine (a verifiers trace's rewards and metrics, TRL's
`get_reward`), so a seat is rewarded exactly as sparring's own trainers reward it.
"""

from __future__ import annotations

from collections.abc import Mapping

from sparring.records.record import EpisodeRecord


def seat_rewards(record: EpisodeRecord, player: str, format_penalty: float = 0.0) -> dict[str, float]:
    """One player's rewards from an episode record, named: `outcome` (the game's reward, as the
    engine scores it; 0 without an outcome) and, with a penalty, `format` (minus `format_penalty`
    per rejected reply, as sparring's GRPO does)."""
    outcome = record.outcome
    out = {"outcome": float(outcome.rewards.get(player, 0.0)) if outcome is not None else 0.0}
    if format_penalty:
        n = rejected(record, player)
        out["format"] = -format_penalty * n if n else 0.0
    return out


def rejected(record: EpisodeRecord, player: str) -> int:
    return sum(1 for c in record.calls if c.player == player and c.rejected)


# Outcome keys that say which episode it was or how it was set up (a prompt variant's number, the
# rounds, the seat order), not how it went: the other engine averages every metric it is handed,
# and `variant 598643451.00` is no measure (issue #61).
EPISODE_FACTS = frozenset({"variant", "flip", "first_mover", "rounds", "order", "judge_questions",
                           "judge_reasoning", "lam"})


def seat_metrics(record: EpisodeRecord, player: str) -> dict[str, float]:
    """The outcome's numeric metrics for one player: top-level numbers, and a per-player mapping's
    value for this player (Deal or No Deal's `points`), plus the rejected replies; the episode's
    facts (`EPISODE_FACTS`) are left to the trace's info."""
    out: dict[str, float] = {"rejected": float(rejected(record, player))}
    metrics = record.outcome.metrics if record.outcome is not None else {}
    for key, value in metrics.items():
        if key in EPISODE_FACTS:
            continue
        if isinstance(value, Mapping) and player in value:
            value = value[player]
        if isinstance(value, (bool, int, float)):
            out[key] = float(value)
    return out
