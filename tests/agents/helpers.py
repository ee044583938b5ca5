"""Drive an agent's generator of model calls by hand, answering each call with a function."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sparring.agents.base import AgentGen, TurnContext
from sparring.gameapi.game import ActionSpec
from sparring.types import Message, ModelCall


def drive(gen: AgentGen, answer: Callable[[ModelCall], Any]) -> tuple[Any, list[list[ModelCall]]]:
    """Run `gen` to completion; returns (its return value, the batches of calls it yielded)."""
    batches: list[list[ModelCall]] = []
    try:
        calls = gen.send(None)
        while True:
            batches.append(calls)
            calls = gen.send([answer(c) for c in calls])
    except StopIteration as stop:
        return stop.value, batches


def ctx(spec: ActionSpec, player: str = "Judge", role: str = "judge") -> TurnContext:
    return TurnContext(player=player, role=role, observation=[Message(role="user", content="Decide.")],
                       spec=spec, seed=1234)
