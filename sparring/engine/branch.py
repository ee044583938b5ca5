"""Branched rollouts: one scheduled job plays a tree of episodes (`branch:` in an experiment).

At a branching turn (the target agent's, or in `full` mode any competing seat's, while fewer than
`depth` branch points lie above it) the acting agent is asked `k` times, as one batch with
different seeds; each alternative is applied to its own fork of the game (`Game.fork`) and every
continuation is played to the end, concurrently, through the same batched runner. Each leaf is a
stored episode: its id derives from the tree (job) id and its path, and `record.tree` says where
it sits. All leaves of a tree are stored together, so an interrupted run resumes tree by tree.
Sibling alternatives were shown identical messages; the exporters turn them into DPO pairs with
the mean outcome of each subtree as its value. A simultaneous step (debaters speaking at once)
branches too: the other players of the step move first, once, on the shared state (a game hides
same-step moves from the step's players, so the brancher's view is unchanged), then the
brancher's alternatives each get a fork.
"""

from __future__ import annotations

import copy
import hashlib
import time
from typing import Any

from sparring.agents.base import AgentGen, TurnContext, gather
from sparring.engine.episode import EpisodeDriver, EpisodeFailed, seat_view
from sparring.errors import ConfigError, EpisodeAbort
from sparring.records.record import CallRecord, EpisodeRecord


class BranchDriver(EpisodeDriver):
    """Plays a job as a tree; `run()` returns the list of leaf records."""

    def __init__(self, *args: Any, branch: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        if not self.game.can_fork:
            raise ConfigError(f"game {self.game.name!r} cannot fork its state, so it cannot branch")
        self.branch = branch
        self.path: list[int] = []
        self.points: list[dict[str, Any]] = []
        self.tree_id = self.id

    def _branches_here(self, player: str) -> bool:
        if len(self.path) >= self.branch.depth:
            return False
        agent = self.job.seats.get(player)
        if self.branch.mode == "half":
            return agent == self.branch.target
        return player not in self.game.evaluators()

    def run(self) -> AgentGen:
        started = time.time()
        try:
            self.state = self.game.reset(self.instance, {p: seat_view(p, a) for p, a in self.seat_agents.items()},
                                         self.rng, flip=self.job.flip)
            leaves = yield from self._play(started)
        except Exception as e:  # one bad tree never stops the run
            raise EpisodeFailed(self.record("failed", f"{type(e).__name__}: {e}", started), e) from e
        return leaves

    def _play(self, started: float) -> AgentGen:
        while not self.game.is_over(self.state):
            players = self.game.to_act(self.state)
            if not players:
                raise EpisodeAbort("game is not over but nobody is to act")
            brancher = next((p for p in players if self._branches_here(p)), None)
            if brancher is not None:
                others = [p for p in players if p != brancher]
                if others:  # a simultaneous step: the others move once, shared by every alternative
                    yield from gather([self._turn(p) for p in others])
                    if self.game.is_over(self.state) or brancher not in self.game.to_act(self.state):
                        continue
                children = yield from self._alternatives(brancher)
                results = yield from gather([child._play(started) for child in children])
                return [leaf for leaves in results for leaf in leaves]
            if len(players) == 1:
                yield from self._turn(players[0])
            else:
                yield from gather([self._turn(p) for p in players])
        return [self._leaf(started)]

    def _alternatives(self, player: str) -> AgentGen:
        """Ask the agent `k` times (one batch); return one child driver per alternative."""
        agent = self.seat_agents[player]
        spec = self.game.action_spec(self.state, player)
        observation = self.game.observe(self.state, player)
        ctxs = [TurnContext(player=player, role=self.roles[player], observation=observation, spec=spec,
                            seed=self.rng.getrandbits(64), episode_id=self.id, instance_id=self.job.instance_id,
                            flip=self.job.flip, turn=self.turns.get((player, spec.tag), 0),
                            labels={**self.labels, "branch": len(self.path)})
                for _ in range(self.branch.k)]
        mines: list[list[CallRecord]] = [[] for _ in ctxs]
        actions = yield from gather([self._record(agent.act(c), player, mine, shared=False)
                                     for c, mine in zip(ctxs, mines, strict=True)])
        children = []
        for i, (action, mine) in enumerate(zip(actions, mines, strict=True)):
            child = self._fork()
            for call in mine:
                call.turn = child.moves
                call.meta.update(branch=len(self.path), alternative=i)
            fb = self.game.act(child.state, player, action)
            if not fb.accepted:
                for call in mine:
                    call.rejected = True
                    call.meta["correction"] = fb.correction
            child.calls.extend(mine)
            child.moves += 1
            key = (player, spec.tag)
            child.turns[key] = child.turns.get(key, 0) + 1
            child.points.append({"player": player, "agent": self.job.seats.get(player), "turn": self.moves})
            child.path.append(i)
            children.append(child)
        return children

    def _fork(self) -> BranchDriver:
        child = copy.copy(self)
        child.state = self.game.fork(self.state)
        child.calls = list(self.calls)
        child.turns = dict(self.turns)
        child.seen = dict(self.seen)  # the conversation view's growth check follows each branch on its own
        child.path, child.points = list(self.path), list(self.points)
        child.rng = copy.deepcopy(self.rng)
        return child

    def _leaf(self, started: float) -> EpisodeRecord:
        record = self.record("complete", None, started)
        leaf_id = hashlib.sha256(f"{self.tree_id}/{'.'.join(map(str, self.path))}".encode()).hexdigest()[:16]
        return record.model_copy(update={"id": leaf_id, "tree": {"id": self.tree_id, "path": list(self.path),
                                                                  "points": list(self.points)}})
