"""The gold policy: replays the simulator's gold path, for expert demonstration episodes.

A scripted model whose reply is the request's private `gold_action` label, which the game puts on
the player's requests while the episode is still on the gold path (never in the messages the
model is shown). Use it as a model spec:

    models:
      gold:
        backend: scripted
        args: {mode: callable, function: "sparring.games.textworld_cooking.gold:gold_command"}

Its episodes are stored like any other, so `sparring export sft` turns them into training rows.
"""

from __future__ import annotations

from sparring.errors import BackendError
from sparring.types import GenerateRequest

GOLD_LABEL = "gold_action"  # the label `TextWorldCookingGame.request_labels` sets


def gold_command(request: GenerateRequest) -> str:
    """The next command of the gold path (a scripted model's `function`)."""
    action = request.context.get(GOLD_LABEL)
    if not isinstance(action, str):
        raise BackendError("the gold policy has no gold action for this request: it only plays "
                           "textworld_cooking episodes, and only while they follow the gold path")
    return action
