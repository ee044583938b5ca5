"""A sparring game as a verifiers v1 environment: each held seat an agent, the engine the referee.

One episode is one task's job played through the engine's in-memory play API (`HeldArena`): the
engine decides who acts and what each seat is shown, validates replies and re-prompts invalid
ones, asks the judge, and scores the outcome — exactly as `sparring run`. A seat the experiment
lets verifiers hold (its agent's model is `SEAT_MODEL`) is a verifiers agent with a live
interaction: each of its turns is one request with that turn's view (`SeatHarness`), recorded on
the seat's trace. Seats of other agents are played inside the engine by their own models (a
scripted partner, a served judge): frozen by construction, with no trace.

Per-seat rewards are the engine's: each trace gets `outcome` = the episode's reward for its player
(and `format`, minus `format_penalty` per rejected reply, when set), the outcome's numeric metrics,
and `info["sparring"]` (episode id, player, status). A seat is trained unless it is an evaluator
(the judge), its model is pinned (`--env.<seat>.model`: a frozen endpoint) or it is listed in
`frozen`. The engine is synchronous: each episode plays in a thread of its own and its seats'
turns come back to the event loop (`SeatLink`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import verifiers.v1 as vf
from pydantic import Field

from sparring.errors import EpisodeAbandoned
from sparring.integrations.rewards import seat_metrics, seat_rewards
from sparring.integrations.verifiers.arena import HeldArena, Seating
from sparring.integrations.verifiers.harness import SeatHarness
from sparring.models.chat import as_dicts
from sparring.models.remote import instruct_prefix
from sparring.records.record import EpisodeRecord
from sparring.types import GenerateRequest

T = TypeVar("T")


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` in a daemon thread of its own: an episode's engine blocks on its seats' turns for
    as long as the episode lasts, so it must neither queue behind other episodes in a bounded pool
    nor keep the process alive if the run is interrupted."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # the episode was cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as e:  # noqa: BLE001 — handed to the awaiting coroutine
            loop.call_soon_threadsafe(settle, None, e)
        else:
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=work, name="sparring-episode", daemon=True).start()
    return await future


class GameEnvConfig(vf.EnvConfig):
    """The knobs of every sparring environment; a package adds one `AgentConfig` per seat."""

    frozen: list[str] = Field(default_factory=list, description="seats never trained (besides the judge and "
                                                                "seats pinned to a model)")
    format_penalty: float = Field(0.0, ge=0.0, description="a `format` reward of minus this per rejected reply")


class SeatLink:
    """A held seat of one live episode: answers the engine's requests (in the engine's thread)
    by running a turn of the seat's interaction on the event loop."""

    def __init__(self, player: str, interaction: Any, harness: SeatHarness, loop: asyncio.AbstractEventLoop):
        self.player, self.interaction, self.harness, self.loop = player, interaction, harness, loop

    def __call__(self, request: GenerateRequest) -> str:
        return asyncio.run_coroutine_threadsafe(self.turn(request), self.loop).result()

    async def turn(self, request: GenerateRequest) -> str:
        messages = as_dicts(request.messages)
        if request.assistant_prefix:  # the reply must start with it; the router strips it again
            messages = instruct_prefix(messages, request.assistant_prefix)
        self.harness.expect(request.sampling)
        segment = await self.interaction.turn(messages)
        if segment.terminated:
            trace = self.interaction.trace
            why = trace.last_error.message if trace.last_error else trace.stop_condition
            raise EpisodeAbandoned(f"{self.player}: its verifiers rollout ended ({why})")
        return segment.last_reply


def credit(trace: Any, record: EpisodeRecord, player: str, role: str, format_penalty: float) -> None:
    """The engine's outcome for `player` on its trace: rewards, metrics and the episode's facts."""
    for name, value in seat_rewards(record, player, format_penalty).items():
        trace.record_reward(name, value)
    trace.record_metrics(seat_metrics(record, player))
    outcome = record.outcome
    trace.info["sparring"] = {
        "episode_id": record.id, "instance_id": record.instance_id, "player": player, "role": role,
        "seats": {p: s.agent for p, s in record.seats.items()}, "matchup": record.matchup, "flip": record.flip,
        "seed": record.seed, "status": record.status,
        "winner": outcome.winner if outcome else None, "reason": outcome.reason if outcome else record.error}


class GameEnv(vf.Env[GameEnvConfig]):
    """A package subclass binds its config class (`vf.Env[ItsConfig]`) and its `seating`."""

    seating: ClassVar[Seating]

    def __init__(self, config: GameEnvConfig) -> None:
        super().__init__(config)
        unknown = sorted(set(config.frozen) - set(self.seating.fields.values()))
        if unknown:
            raise ValueError(f"frozen: unknown seat(s) {unknown}; the seats are {sorted(self.seating.fields.values())}")
        self._arena: HeldArena | None = None
        self._arena_lock = asyncio.Lock()

    async def _held_arena(self) -> HeldArena:
        """The arena, built by the first episode (it loads the instances, off the event loop)."""
        async with self._arena_lock:
            arena = self._arena
            if arena is None:
                held_arena = getattr(self.taskset, "held_arena", None)
                if held_arena is None:
                    raise ValueError(f"{type(self).__name__} plays a sparring taskset, "
                                     f"not {type(self.taskset).__name__}")
                built: HeldArena = await asyncio.to_thread(held_arena)
                self._arena = arena = built
            return arena

    async def setup(self, agents: vf.Agents) -> None:
        for player, field in self.seating.fields.items():
            agent = getattr(agents, field)
            if not isinstance(agent.harness, SeatHarness):
                raise ValueError(f"seat {field!r} must use this environment's harness (its default), not "
                                 f"{agent.harness.config.id!r}: each turn's request is the game's whole view")
            pinned = getattr(self.config, field).model is not None
            agent.trainable = not (player in self.seating.evaluators or pinned or field in self.config.frozen)

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        data = task.data
        arena = await self._held_arena()
        job = arena.job(data.instance_id, list(data.agents), data.seed, data.flip)  # type: ignore[attr-defined]
        held = arena.held(job)
        if not held:
            raise ValueError(f"task {data.name!r} seats no agent that verifiers holds")
        loop = asyncio.get_running_loop()
        links: dict[str, SeatLink] = {}
        async with contextlib.AsyncExitStack() as stack:
            for player in held:
                agent = getattr(agents, self.seating.fields[player])
                seat_task = vf.Task(vf.TaskData(idx=data.idx, id=f"{data.id}/{player}", name=f"{data.name}: {player}"))
                interaction = await stack.enter_async_context(agent.interaction(seat_task))
                links[player] = SeatLink(player, interaction, agent.harness, loop)
            record = await in_thread(arena.play, job, links)
        for player, link in links.items():
            credit(link.interaction.trace, record, player, self.seating.roles[player], self.config.format_penalty)
        if record.status == "failed":
            raise RuntimeError(f"the sparring episode {record.id} failed: {record.error}")

    async def stop(self) -> None:
        if self._arena is not None:
            self._arena.close()
            self._arena = None
