"""The state of one Deal or No Deal episode, and how a player's chat view of it is joined.

Separate from the rules (`game.py`): the state is plain data that best-of-N look-ahead forks, and
the view is built from per-turn messages that are made once and shared by every later turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sparring.gameapi.game import Event
from sparring.games.negotiation.instance import DondInstance, Triple
from sparring.games.negotiation.protocol import ParsedAction
from sparring.prompts import PromptSet
from sparring.types import Message, new

PLAYERS: tuple[str, str] = ("Player_1", "Player_2")


@dataclass
class Turn:
    """One accepted action and how each player sees it (absent: not at all). Built once, then
    shared by every later observation of the episode."""

    player: str
    action: ParsedAction
    views: dict[str, Message]


@dataclass
class DondState:
    """Everything one episode has decided so far (the game's `fork` copies its mutable parts)."""

    instance: DondInstance
    prompts: dict[str, PromptSet]
    values: dict[str, Triple]
    first: str
    flip: bool
    variant: int
    to_move: str
    turns: list[Turn] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    proposals: dict[str, Triple] = field(default_factory=dict)   # insertion order = proposal order
    pending: dict[str, tuple[str, str]] = field(default_factory=dict)  # player -> (bad output, correction)
    errors_in_row: int = 0
    n_invalid: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLAYERS, 0))
    n_messages: int = 0
    over: bool = False
    end: str | None = None          # deal | mismatch | max_turns | aborted
    abort_reason: str | None = None
    texts: dict[str, dict[str, Any]] = field(default_factory=dict)  # per player: rendered static texts
    # per player, everything it was shown and wrote in order (the conversation view, `game.conversation`)
    talk: dict[str, list[Message]] = field(default_factory=dict)

    def other(self, player: str) -> str:
        return PLAYERS[1] if player == PLAYERS[0] else PLAYERS[0]


def merge_roles(msgs: list[Message | tuple[str, str]]) -> list[Message]:
    """Join consecutive same-role turns so chat templates see strict user/assistant alternation.

    Messages that are not joined are passed through as they are (built once per episode or per
    static view); a new Message is made only for joined ones and for (role, content) pairs.
    """
    roles: list[str] = []
    contents: list[str] = []
    made: list[Message | None] = []
    for m in msgs:
        role: str
        if isinstance(m, Message):
            role, content, msg = m.role, m.content, m
        else:
            (role, content), msg = m, None
        if roles and roles[-1] == role and role != "system":
            contents[-1] = f"{contents[-1]}\n\n{content}"
            made[-1] = None
        else:
            roles.append(role)
            contents.append(content)
            made.append(msg)
    return [m if m is not None else new(Message, role=r, content=c)
            for r, c, m in zip(roles, contents, made, strict=True)]
