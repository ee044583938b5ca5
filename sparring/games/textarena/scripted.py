"""Scripted TextArena players: baselines for the shipped games and fast tests
(`backend: scripted, mode: callable`). Each reads only the observation it is shown.

- `random_legal`: a uniformly random move among those the observation lists as available
  ("Available Moves: '[0]', '[4]'", "Your available actions are: '[check]', '[bet]'"), seeded by
  the observation, so the same position always gets the same move.
- `kuhn_rule` (Kuhn Poker): a fixed card rule — with the King it bets (or calls), with the Queen it
  checks (or calls), with the Jack it checks (or folds to a bet); a held-out opponent the learning
  suite never trains against.
- `negotiator` (SimpleNegotiation): accepts an incoming offer that does not lose it value by its own
  values, otherwise denies it and offers one unit of its least valuable resource for one unit of its
  most valuable one.
"""

from __future__ import annotations

import hashlib
import random
import re

from sparring.types import GenerateRequest

_AVAILABLE = re.compile(r"available (?:moves|actions)[^:\n]*:\s*((?:'\[[^\]]+\]'(?:,\s*)?)+)", re.IGNORECASE)
_MOVE = re.compile(r"'(\[[^\]]+\])'")
_RESOURCE = re.compile(r"\[(\w+)\]\s+Qty:\s*(\d+)\s+Value:\s*(\d+)")
_ME = re.compile(r"You are Player (\d+)")
_OFFER = re.compile(r"Player (\d+) made the following offer to Player (\d+): Offered items: (.+?) -> "
                    r"Requested items: (.+)")


def _observation(request: GenerateRequest) -> str:
    """TextArena's whole observation so far: the one user message of the rendered view, or the user
    turns of the conversation view joined as TextArena wrote them (each new part began with the
    newline the conversation drops), so a baseline plays the same moves in either view."""
    return "\n".join(m.content for m in request.messages if m.role == "user")


def _rng(text: str) -> random.Random:
    return random.Random(int(hashlib.sha256(text.encode()).hexdigest()[:16], 16))


def random_legal(request: GenerateRequest) -> str:
    obs = _observation(request)
    lists = _AVAILABLE.findall(obs)
    moves = _MOVE.findall(lists[-1]) if lists else []
    return _rng(obs).choice(moves) if moves else "[0]"


_CARD = re.compile(r"Your card is: '([JQK])'")


def kuhn_rule(request: GenerateRequest) -> str:
    obs = _observation(request)
    cards = _CARD.findall(obs)
    lists = _AVAILABLE.findall(obs)
    moves = [m.strip("[]").lower() for m in _MOVE.findall(lists[-1])] if lists else []
    card = cards[-1] if cards else "J"
    prefer = {"K": ("bet", "call"), "Q": ("check", "call"), "J": ("check", "fold")}[card]
    return f"[{next((m for m in prefer if m in moves), moves[0] if moves else 'check')}]"


def _items(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in text.split(","):
        m = re.match(r"\s*(\d+)\s+(\w+)", part)
        if m:
            out[m.group(2)] = out.get(m.group(2), 0) + int(m.group(1))
    return out


def negotiator(request: GenerateRequest) -> str:
    obs = _observation(request)
    values = {name: int(value) for name, _, value in _RESOURCE.findall(obs)}
    me = _ME.search(obs)
    offers = _OFFER.findall(obs)
    if me and offers and offers[-1][1] == me.group(1) and obs.rstrip().endswith(offers[-1][3].rstrip()):
        _, _, given, asked = offers[-1]
        gain = sum(values.get(k, 0) * n for k, n in _items(given).items())
        loss = sum(values.get(k, 0) * n for k, n in _items(asked).items())
        return "[Accept]" if gain >= loss else "[Deny]"
    if len(values) < 2:
        return "[Deny]"
    cheap, dear = min(values, key=values.__getitem__), max(values, key=values.__getitem__)
    return f"[Offer: 1 {cheap} -> 1 {dear}]"
