"""The engine's side of look-ahead: forks of a live episode offered to the acting agent.

`GameLookahead` implements `agents.lookahead.Lookahead` for one player's turn: candidates are
applied to forks with the game's own `act` (so its validation is respected), opponents answer on
forks through their own agents, and the game's first evaluator seat judges a fork through its
agent. Every model call goes out through the usual batched runner.
"""

from __future__ import annotations

import random
from typing import Any

from sparring.agents.base import Agent, AgentGen, TurnContext, gather
from sparring.gameapi.game import Action, Feedback, Game


class GameLookahead:
    """Forks of `state` at `player`'s turn. `labels` go on every request (purpose = best_of_n)."""

    def __init__(self, game: Game, state: Any, player: str, agents: dict[str, Agent], roles: dict[str, str],
                 rng: random.Random, episode_id: str, instance_id: str, flip: bool, labels: dict[str, Any]):
        self.game, self.state, self.player = game, state, player
        self.agents, self.roles, self.rng = agents, roles, rng
        self.episode_id, self.instance_id, self.flip, self.labels = episode_id, instance_id, flip, labels
        evaluators = [p for p in game.evaluators() if p != player]
        self.evaluator = evaluators[0] if evaluators else None

    def _ctx(self, player: str, observation: list, spec: Any, purpose: str) -> TurnContext:
        return TurnContext(player=player, role=self.roles[player], observation=observation, spec=spec,
                           seed=self.rng.getrandbits(64), episode_id=self.episode_id,
                           instance_id=self.instance_id, flip=self.flip,
                           labels={**self.labels, "purpose": purpose})

    def try_action(self, text: str) -> tuple[Any, Feedback]:
        state = self.game.fork(self.state)
        return state, self.game.act(state, self.player, Action(text=text))

    def opponent_replies(self, state: Any, n: int) -> AgentGen:
        evaluators = set(self.game.evaluators())
        nxt = [p for p in self.game.to_act(state) if p != self.player and p not in evaluators]
        if self.game.is_over(state) or not nxt:
            return [state]
        opp = nxt[0]
        spec = self.game.action_spec(state, opp)
        ctx = self._ctx(opp, self.game.observe(state, opp), spec, "best_of_n_opponent")
        comps = yield from self.agents[opp].generate(ctx, ctx.observation, tag="bon_opponent", n=n,
                                                     prefix=spec.assistant_prefix)
        out = []
        for c in comps:
            fork = self.game.fork(state)
            self.game.act(fork, opp, Action(text=c.text.strip()))
            out.append(fork)
        return out

    def evaluate(self, states: list[Any]) -> AgentGen:
        if self.evaluator is None:
            return [None] * len(states)
        views = [self.game.evaluation(st, self.evaluator) for st in states]
        asked = [i for i, v in enumerate(views) if v is not None]
        ctxs = [self._ctx(self.evaluator, views[i][0], views[i][1], "best_of_n") for i in asked]  # type: ignore[index]
        judge = self.agents[self.evaluator]
        verdicts = yield from gather([judge.act(c) for c in ctxs])
        out: list[float | None] = [None] * len(states)
        for i, action in zip(asked, verdicts, strict=True):
            out[i] = float((action.probs or {}).get(self.player, 0.0))
        return out
