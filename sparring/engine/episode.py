"""Plays one episode as a generator of model calls: game rules + seated agents, fully recorded.

The runner advances many of these side by side and batches their calls. This module knows no
game: it asks the game who acts and what they see, asks agents to act, and records everything.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any

from pydantic import ConfigDict, Field

from sparring.agents.base import Agent, AgentGen, TurnContext, gather, unwrap
from sparring.engine.lookahead import GameLookahead
from sparring.errors import EpisodeAbandoned, EpisodeAbort, SparringError
from sparring.gameapi.game import Action, Game, Instance, Outcome, Seat
from sparring.records.record import CallRecord, EpisodeRecord, SeatRecord, episode_id
from sparring.types import GenerateRequest, Message, Strict, new

MAX_REJECTIONS = 50  # engine-level guard if a game keeps rejecting without ever aborting


class EpisodeJob(Strict):
    """One scheduled episode. `seats` maps game player ids to agent names.

    Frozen: the id is a hash of the fields, computed once (schedules, shards, resume and the
    driver all ask for it) and cached.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    experiment: str
    instance_id: str
    seats: dict[str, str]
    seed: int
    repeat: int = 0
    flip: bool = False
    matchup: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)

    @cached_property
    def id(self) -> str:
        return episode_id(self.experiment, self.instance_id, self.seats, self.seed, self.repeat, self.flip)


class EpisodeFailed(Exception):
    """Carries the partial record of an episode that raised, so the failure is stored whole."""

    def __init__(self, record: EpisodeRecord, cause: BaseException):
        super().__init__(str(cause))
        self.record, self.cause = record, cause


class EpisodeDriver:
    """Runs one job. Call `run()` to get the generator the runner advances."""

    def __init__(self, game: Game, job: EpisodeJob, instance: Instance, agents: dict[str, Agent],
                 models: Callable[[str], str] | None = None):
        self.game, self.job, self.instance, self.agents = game, job, instance, agents
        self.rng = random.Random(job.seed)
        self.id = job.id  # hashing is not free: computed once, not per turn
        # Labels on every request: replay backends route by matchup/repeat (replicate tournaments).
        self.labels = {"matchup": job.matchup, "repeat": job.repeat}
        roles = game.players()
        self.roles = roles
        self.seat_agents = {p: agents[a] for p, a in job.seats.items()}
        missing = [p for p in roles if p not in self.seat_agents]
        if missing:
            raise EpisodeAbort(f"no agent seated for player(s) {', '.join(missing)}")
        # Seats whose agents look ahead (best-of-N): they get forks of the game at their turns.
        self.lookahead = {p for p, a in self.seat_agents.items()
                          if getattr(a.config, "best_of_n", None) is not None}
        self.calls: list[CallRecord] = []
        self.turns: dict[tuple[str, str], int] = {}
        self.moves = 0  # actions submitted to the game so far (the `turn` of each call record)
        self.seen: dict[str, list[Message]] = {}  # conversation view: what each player was last shown
        self.state: Any = None

    # -- recording --------------------------------------------------------------------------
    def _record(self, gen: AgentGen, player: str, mine: list[CallRecord], shared: bool = True) -> AgentGen:
        """Pass calls through, logging each call with its result into `mine` (this turn's own
        calls: simultaneous turns interleave in `self.calls`) and, if `shared`, `self.calls`
        (branched alternatives keep theirs for their own branch)."""
        try:
            calls = next(gen)
            while True:
                results = yield calls
                for call, res in zip(calls, results, strict=False):
                    record = _call_record(call, res, player)
                    if shared:
                        self.calls.append(record)
                    mine.append(record)
                calls = gen.send(results)
        except StopIteration as stop:
            return stop.value

    def record(self, status: str, error: str | None = None, started: float = 0.0,
               abandoned: str | None = None) -> EpisodeRecord:
        game, job = self.game, self.job
        if abandoned is not None:
            outcome: Outcome | None = self._abandoned(abandoned)
        else:
            outcome = game.outcome(self.state) if (self.state is not None and status != "failed") else None
        tokens: dict[str, list[int]] = {}
        for c in self.calls:
            t = tokens.setdefault(c.model, [0, 0])
            for comp in c.completions or ():
                t[0] += comp.usage.prompt_tokens
                t[1] += comp.usage.completion_tokens
        usage = {m: {"prompt_tokens": p, "completion_tokens": n} for m, (p, n) in tokens.items()}
        return new(
            EpisodeRecord,
            id=self.id, experiment=job.experiment, game=game.name, instance_id=job.instance_id,
            instance=game.instance_summary(self.instance),
            seats={p: _seat_record(self.agents[a], self.roles.get(p, "?")) for p, a in job.seats.items()},
            seed=job.seed, repeat=job.repeat, flip=job.flip, matchup=job.matchup,
            status=status if outcome is None or outcome.status == "complete" else "aborted",
            outcome=outcome, events=game.events(self.state) if self.state is not None else [],
            calls=self.calls, state=game.record_state(self.state) if self.state is not None else {},
            error=error, started_at=started, duration_s=time.time() - started if started else 0.0,
            usage=usage)

    def _abandoned(self, reason: str) -> Outcome:
        """The outcome of an episode a player left: the game's metrics of the state reached (if
        it can tell them for an unfinished game), no winner, marked `abandoned`."""
        base = Outcome()
        if self.state is not None:
            try:
                base = self.game.outcome(self.state)
            except Exception:  # noqa: BLE001 — a game may not score an unfinished state
                base = Outcome()
        return new(Outcome, rewards=base.rewards, winner=None, status="aborted", reason=reason,
                   metrics={**base.metrics, "abandoned": True})

    # -- play -------------------------------------------------------------------------------
    def run(self) -> AgentGen:
        started = time.time()
        seats = {p: seat_view(p, a) for p, a in self.seat_agents.items()}
        try:
            self.state = self.game.reset(self.instance, seats, self.rng, flip=self.job.flip)
            while not self.game.is_over(self.state):
                players = self.game.to_act(self.state)
                if not players:
                    raise EpisodeAbort("game is not over but nobody is to act")
                if len(players) == 1:  # the common case: no need for gather's bookkeeping
                    yield from self._turn(players[0])
                else:
                    yield from gather([self._turn(p) for p in players])
        except EpisodeAbandoned as e:  # a player left: stored as aborted, the transcript so far kept
            return self.record("aborted", None, started, abandoned=str(e))
        except Exception as e:  # one bad episode never stops the run
            raise EpisodeFailed(self.record("failed", f"{type(e).__name__}: {e}", started), e) from e
        return self.record("complete", None, started)

    def _turn(self, player: str) -> AgentGen:
        agent = self.seat_agents[player]
        for _ in range(MAX_REJECTIONS):
            spec = self.game.action_spec(self.state, player)
            key = (player, spec.tag)
            private = self.game.request_labels(self.state, player)  # e.g. an expert's next action
            observation = self.game.observe(self.state, player)
            if self.game.view == "conversation":
                self._check_grows(player, observation)
            ctx = TurnContext(player=player, role=self.roles[player], observation=observation, spec=spec,
                              seed=self.rng.getrandbits(64), episode_id=self.id,
                              instance_id=self.job.instance_id, flip=self.job.flip,
                              turn=self.turns.get(key, 0),
                              labels={**self.labels, **private} if private else self.labels,
                              lookahead=self._lookahead(player) if player in self.lookahead else None)
            mine: list[CallRecord] = []
            action = yield from self._record(agent.act(ctx), player, mine)
            if "candidates" in action.meta:  # best-of-N: mark which candidate was kept
                _mark_candidates(mine, action, player)
            fb = self.game.act(self.state, player, action)
            for c in mine:
                c.turn = self.moves
                if fb.reward is not None and c.player == player:
                    c.step_reward = float(fb.reward)
                if not fb.changed and c.player == player:
                    c.meta["unchanged"] = True  # taken, but the game's state is as it was (turn_states)
            self.moves += 1
            if fb.accepted:
                if action.probs is not None:
                    _mark_choice(mine, action, player)
                self.turns[key] = self.turns.get(key, 0) + 1
                return
            for c in mine:  # an invalid reply, corrected or aborting: never trained on
                if c.player != player:  # the evaluator's look-ahead calls were not rejected
                    continue
                c.rejected = True
                c.meta["correction"] = fb.correction
                if fb.abort:
                    c.meta["abort"] = fb.abort
            if fb.abort or self.game.is_over(self.state):
                self.turns[key] = self.turns.get(key, 0) + 1
                return
        raise EpisodeAbort(f"{player}: {MAX_REJECTIONS} rejected actions in a row")

    def _check_grows(self, player: str, observation: list[Message]) -> None:
        """A conversation view may only grow: what `player` was shown before must be the start of
        what it is shown now, message for message (else its calls would not extend one another and
        a trained token would not be what the model saw). A game that breaks this fails the episode
        with the game, the player, the move and the message named."""
        before = self.seen.get(player) or []
        if observation[: len(before)] != before:
            i = next((i for i, (a, b) in enumerate(zip(before, observation, strict=False)) if a != b), len(observation))
            was, now = before[i], observation[i] if i < len(observation) else None
            raise SparringError(
                f"game {self.game.name!r} offers a conversation view, but at move {self.moves} it rewrote message {i} "
                f"of {player}'s conversation ({was.role}: {was.content[:80]!r} -> "
                + (f"{now.role}: {now.content[:80]!r}" if now is not None else "removed")
                + "); a conversation may only grow")
        self.seen[player] = list(observation)

    def _lookahead(self, player: str) -> GameLookahead:
        return GameLookahead(self.game, self.state, player, self.seat_agents, self.roles, self.rng,
                             self.id, self.job.instance_id, self.job.flip, self.labels)


def seat_view(player: str, agent: Agent) -> Seat:
    """The game's view of a seat; one object per (agent, player), reused by every episode."""
    cache = agent.__dict__.setdefault("_seats", {})
    seat = cache.get(player)
    if seat is None or seat.prompts is not agent.prompts:
        sp = getattr(agent.config, "scratchpad", None)
        seat = cache[player] = Seat(player=player, agent=agent.name, prompts=agent.prompts,
                                    scratchpad=bool(sp and sp.enabled))
    return seat


def _seat_record(agent: Agent, role: str) -> SeatRecord:
    """Who sat where, for the record; one object per (agent, role), reused by every episode."""
    cache = agent.__dict__.setdefault("_seat_records", {})
    rec = cache.get(role)
    if rec is None or rec.model != agent.model or rec.prompt_set != agent.prompts.name:
        rec = cache[role] = SeatRecord(agent=agent.name, model=agent.model, role=role,
                                       prompt_set=agent.prompts.name)
    return rec


def _call_record(call: Any, res: Any, player: str) -> CallRecord:
    """One CallRecord, validated in a single call (faster than model_construct or assigning
    attributes after construction; this runs once per model call)."""
    req = call.request
    meta = {k: v for k, v in call.meta.items() if k not in ("player", "tag")}
    purpose = req.context.get("purpose")
    if purpose:
        meta["purpose"] = purpose
    fields: dict[str, Any] = {}
    if isinstance(req, GenerateRequest):
        fields["sampling"] = req.sampling
    else:
        fields["options"] = req.options
    if isinstance(res, BaseException):
        fields["error"] = f"{type(res).__name__}: {res}"
    elif call.op == "generate":
        fields["completions"] = res  # validated into Completions by CallRecord, like every field
    else:
        fields["logprobs"] = [float(x) for x in unwrap(res)]
    return new(CallRecord, player=call.meta.get("player", player), tag=call.meta.get("tag", ""),
               model=call.model, op=call.op, messages=req.messages, assistant_prefix=req.assistant_prefix,
               meta=meta, **fields)


def _mark_choice(calls: list[CallRecord], action: Action, player: str) -> None:
    """Record how an accepted choice (a verdict) was obtained — `score`, `score_instruction`,
    `generate`... (a panel: each member's way) — on the player's last call of the turn, where run
    summaries count them without knowing the game."""
    votes = action.meta.get("vote_methods")
    methods = [str(m) for m in votes.values()] if isinstance(votes, dict) and votes else \
        [str(action.meta.get("method") or "unknown")]
    for c in reversed(calls):
        if c.player == player:
            c.meta["verdict_methods"] = methods
            return


def _mark_candidates(calls: list[CallRecord], action: Action, player: str) -> None:
    """Mark which sampled candidate was kept (best-of-N) on the call of `player` that produced
    them (simultaneous turns interleave several players' calls in the record)."""
    if "candidates" not in action.meta:
        return
    n = len(action.meta["candidates"])
    for c in calls:
        if (c.player == player and c.op == "generate" and c.completions and len(c.completions) == n
                and c.meta.get("purpose") is None):
            if c.tag not in ("scratchpad", "bon_opponent"):
                c.chosen = action.meta["chosen"]
                c.candidate_scores = list(action.meta["candidate_scores"])
                break
