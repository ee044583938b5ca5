"""A scripted Deal or No Deal partner with a known, learnable rule (a scripted model's `function`):
the partner the learning suite's GRPO experiment trains against.

Why: a partner that only sends messages can never close a deal (after a proposal the other
player must propose, so every game aborts), and one that proposes at random makes the learner's
points depend on luck, not on what it proposes. This one makes them depend on the learner:

- before any proposal it says which item it values most:
  `[message] I care most about the hats; you can have the rest.`
- once the other player has proposed, it accepts (proposes the complement: a deal) when that
  complement is worth at least half of what the whole pool is worth to it (`ACCEPT_SHARE`);
  otherwise it claims every item it values (the proposals do not add up: no deal);
- it never proposes first.

So the best reply is the proposal that takes the most for oneself while leaving the partner half
its value, which the learner can find from the partner's message and the game's outcomes. The
partner reads its values, the pool and the other's proposal from the game's private request
labels (`DondGame.request_labels`), never from the prompt's wording.
"""

from __future__ import annotations

import re

from sparring.errors import BackendError
from sparring.games.negotiation.instance import ITEMS, PLURALS, Triple, remainder
from sparring.games.negotiation.objectives import points
from sparring.games.negotiation.protocol import format_proposal
from sparring.types import GenerateRequest

VALUES_LABEL = "dond_values"
POOL_LABEL = "dond_pool"
OFFER_LABEL = "dond_offer"  # the counts the other player proposed for itself (absent: no proposal yet)
ACCEPT_SHARE = 0.5


def _triple(value: object, name: str) -> Triple:
    if not (isinstance(value, list | tuple) and len(value) == 3 and all(isinstance(x, int) for x in value)):
        raise BackendError(f"the DoND partner needs its {name} (three counts) in the request's labels: it only "
                           "plays Deal or No Deal")
    return (value[0], value[1], value[2])


def reply(values: Triple, pool: Triple, offer: Triple | None) -> str:
    """The partner's turn as the game's text format (see the module docstring for the rule)."""
    if offer is None:
        top = max(range(3), key=lambda i: (values[i] * (pool[i] > 0), -i))
        item = ITEMS[top] if pool[top] == 1 else PLURALS[top]
        return f"[message] I care most about the {item}; you can have the rest."
    rest = remainder(pool, offer)
    if min(rest) >= 0 and points(values, rest) >= ACCEPT_SHARE * points(values, pool):
        return f"[propose] {format_proposal(rest)}"
    wanted = (pool[0] * (values[0] > 0), pool[1] * (values[1] > 0), pool[2] * (values[2] > 0))
    return f"[propose] {format_proposal(wanted)}"


def fair_partner(request: GenerateRequest) -> str:
    """`function: sparring.games.negotiation.partner:fair_partner` of a scripted model."""
    labels = request.context
    values, pool = _triple(labels.get(VALUES_LABEL), "values"), _triple(labels.get(POOL_LABEL), "pool")
    offer = labels.get(OFFER_LABEL)
    return reply(values, pool, None if offer is None else _triple(offer, "offer"))


FAVOURITE = re.compile(r"I care most about the (book|hat|ball)s?\b")


def favourite(request: GenerateRequest) -> int | None:
    """The item `fair_partner` said it cares most about, read from its message in the request (None
    before it spoke)."""
    for message in reversed(request.messages):
        found = FAVOURITE.search(message.content or "")
        if found:
            return ITEMS.index(found.group(1))
    return None


def claim(values: Triple, pool: Triple, partner_item: int) -> Triple:
    """The demonstrator's proposal: every item worth something to it, except all of the partner's
    favourite."""
    return (0 if partner_item == 0 or values[0] == 0 else pool[0],
            0 if partner_item == 1 or values[1] == 0 else pool[1],
            0 if partner_item == 2 or values[2] == 0 else pool[2])


def demonstrator(request: GenerateRequest) -> str:
    """`function: sparring.games.negotiation.partner:demonstrator`: a player for the other seat of
    `fair_partner`, whose games are demonstrations for a warm start (tool calls for TRL,
    `sparring.integrations.trl.demos`). It asks what the partner wants, then proposes to keep every
    item it values except all of the partner's favourite; the partner's rule decides whether that is
    a deal, so the demonstrations that score are the ones to learn from."""
    labels = request.context
    values, pool = _triple(labels.get(VALUES_LABEL), "values"), _triple(labels.get(POOL_LABEL), "pool")
    item = favourite(request)
    if item is None:
        return "[message] I would like a deal that works for both of us. Which item matters most to you?"
    return f"[propose] {format_proposal(claim(values, pool, item))}"
