"""TextArena's hooks: headline metrics (invalid moves, draws, length); wins come from the rewards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparring.gameapi.hooks import GameHooks, Metric, PlayPanel


def quality(metrics: Mapping[str, Any]) -> float | None:
    """The clemscore's quality of one game: 100 x the share of valid moves (a game against a
    baseline is read by its win rate, which the report shows beside it)."""
    rate = metrics.get("invalid_rate")
    return None if rate is None else 100.0 * (1.0 - float(rate))


PLAY = PlayPanel(roles=("player",), rules_first=True, hints={
    "move": "Your move as the observation asks for it, in brackets: [4] (TicTacToe), [check] / [bet] / [call] / "
            "[fold] (Kuhn Poker), [Offer: 1 Wheat -> 1 Ore] / [Accept] / [Deny] (negotiation)."})

HOOKS = GameHooks(quality=quality, play=PLAY, metrics=(
    Metric("invalid_rate", "lower", "bootstrap", "invalid moves per move attempted (TextArena's own check)"),
    Metric("draw", "lower", "wilson", "the game ended without a winner"),
    Metric("turns", "lower", "bootstrap", "moves attempted per game"),
))
