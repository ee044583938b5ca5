"""TextArena environments sparring adds: variants of TextArena's own, subclassed, by id.

- `KuhnPokerBets-v0`: Kuhn Poker as Kuhn (1950) defines it. TextArena 0.7.4's `KuhnPoker-v0` never
  puts a bet into the pot (its pot is the two antes whatever happens), so every hand pays +1 or -1
  and betting changes nothing but the opponent's chance to fold; its own rules text says a bet
  "adds 1 chip to the pot". Here a bet and a call each move a chip from the player into the pot, so
  a called bet is won or lost at 2: bluffing, calling and folding have their real prices and a
  fixed opponent's mistakes can be exploited. Everything else (dealing, turn order, observations,
  invalid moves, rounds) is TextArena's class.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_MOVE = re.compile(r"\[(Check|Bet|Fold|Call)\]", re.IGNORECASE)  # the move TextArena's Kuhn Poker reads


def _kuhn_bets() -> type:
    from textarena.envs.KuhnPoker.env import KuhnPokerEnv

    class KuhnPokerBets(KuhnPokerEnv):
        """TextArena's Kuhn Poker with bets and calls paid into the pot (see the module docstring)."""

        def step(self, action: str) -> tuple[bool, dict[str, Any]]:
            game = self.state.game_state
            found = _MOVE.search(action.strip())
            move = found.group(1).lower() if found else None
            if move in ("bet", "call") and move in game["current_legal_action_tree"]:
                game["pot"] += 1
                game["player_chips"][self.state.current_player_id] -= 1
            return super().step(action)

    return KuhnPokerBets


# sparring's id -> (the TextArena id it varies: its registered arguments and wrappers, the class)
VARIANTS: dict[str, tuple[str, Callable[[], type]]] = {"KuhnPokerBets-v0": ("KuhnPoker-v0", _kuhn_bets)}


def make_variant(env_id: str, **kwargs: Any) -> Any:
    """A variant built as TextArena's `make` builds its base: the base's registered arguments (with
    `kwargs` over them), then its default wrappers (the LLM observation and action formats)."""
    from textarena.envs.registration import ENV_REGISTRY

    base, cls = VARIANTS[env_id]
    spec = ENV_REGISTRY[base]
    env = cls()(**{**spec.kwargs, **kwargs})
    env.env_id = env_id
    for wrapper in spec.default_wrappers or []:
        env = wrapper(env)
    return env
