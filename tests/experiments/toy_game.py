"""A small but complete game for engine tests: two speakers argue sides, a judge decides.

It exercises everything the engine must handle without depending on the real games: sequential
turns, per-player visibility, flips, rejected actions with corrections, game aborts, judge
verdicts by score, best-of-N look-ahead (fork + evaluation), and formats with one or no
non-judge seat and without a judge (like negotiation).
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from sparring.gameapi.game import (
    Action,
    ActionSpec,
    Event,
    Feedback,
    Game,
    Instance,
    Outcome,
    Seat,
    register_game,
)
from sparring.types import Message, Strict

HERE = Path(__file__).parent
PROMPT_FILES = [str(HERE / "toy_debater.yaml"), str(HERE / "toy_judge.yaml")]
MODELS_FILE = str(HERE / "models.yaml")


class ToyConfig(Strict):
    rounds: int = Field(1, ge=1)
    speakers: int = Field(2, ge=0, le=2, description="0 = judge only, 1 = consultancy-like")
    judged: bool = True
    reject_word: str | None = None
    max_errors: int = 3


class ToyInstance(Instance):
    question: str
    answers: list[str]
    correct: int


@dataclass
class ToyState:
    instance: ToyInstance
    seats: dict[str, Seat]
    sides: dict[str, int]
    order: list[str]
    pos: int = 0
    events: list[Event] = field(default_factory=list)
    probs: dict[str, float] | None = None
    errors: int = 0
    aborted: str | None = None


SPEAKERS = ["A", "B"]


@register_game("toy")
class ToyGame(Game[ToyInstance, ToyState]):
    name: ClassVar[str] = "toy"
    Config = ToyConfig
    InstanceType = ToyInstance
    default_prompts: dict[str, str] = {"debater": "toy-debater", "judge": "toy-judge"}
    evaluator_roles: ClassVar[frozenset[str]] = frozenset({"judge"})
    config: ToyConfig

    def players(self) -> dict[str, str]:
        roles = {p: "debater" for p in SPEAKERS[: self.config.speakers]}
        if self.config.judged:
            roles["judge"] = "judge"
        return roles

    def reset(self, instance: ToyInstance, seats: dict[str, Seat], rng: random.Random, flip: bool = False) -> ToyState:
        first = rng.randrange(2)
        if flip:
            first = 1 - first
        speakers = SPEAKERS[: self.config.speakers]
        sides = {p: (first + i) % 2 for i, p in enumerate(speakers)}
        order = [p for _ in range(self.config.rounds) for p in speakers]
        if self.config.judged:
            order.append("judge")
        return ToyState(instance=instance, seats=seats, sides=sides, order=order)

    def to_act(self, state: ToyState) -> list[str]:
        return [] if self.is_over(state) else [state.order[state.pos]]

    def action_spec(self, state: ToyState, player: str) -> ActionSpec:
        if player == "judge":
            return ActionSpec(kind="choice", tag="verdict", options=list(SPEAKERS[: max(1, self.config.speakers)]))
        return ActionSpec(kind="text", tag="speech", scratchpad_instruction="Plan your speech.")

    def observation(self, state: ToyState, player: str) -> list[Message]:
        prompts = state.seats[player].prompts
        inst = state.instance
        if player == "judge":
            system = prompts.render("system", question=inst.question)
        else:
            system = prompts.render("system", name=player, question=inst.question,
                                    answer=inst.answers[state.sides[player]])
        msgs = [Message(role="system", content=system)]
        for ev in state.events:
            if ev.visible_to is not None and player not in ev.visible_to:
                continue
            role = "assistant" if ev.player == player else "user"
            msgs.append(Message(role=role, content=f"{ev.player}: {ev.content}" if role == "user" else ev.content))
        if msgs[-1].role != "user":
            msgs.append(Message(role="user", content=prompts.render("turn", name=player)))
        return msgs

    def act(self, state: ToyState, player: str, action: Action) -> Feedback:
        if player == "judge":
            state.probs = dict(action.probs or {})
            state.events.append(Event(index=len(state.events), player=player, tag="verdict",
                                      content=str(state.probs)))
            state.pos += 1
            return Feedback()
        text = action.text or ""
        if self.config.reject_word and self.config.reject_word in text:
            state.errors += 1
            state.events.append(Event(index=len(state.events), player=player, tag="invalid", content=text,
                                      visible_to=[player]))
            if state.errors >= self.config.max_errors:
                state.aborted = f"{player} made {state.errors} invalid moves"
                return Feedback(accepted=False, abort=state.aborted)
            return Feedback(accepted=False, correction=f"do not say {self.config.reject_word}")
        state.errors = 0
        state.events.append(Event(index=len(state.events), player=player, tag="speech", content=text,
                                  round=state.pos // max(1, self.config.speakers)))
        state.pos += 1
        return Feedback()

    def is_over(self, state: ToyState) -> bool:
        return state.aborted is not None or state.pos >= len(state.order)

    def outcome(self, state: ToyState) -> Outcome:
        if state.aborted:
            return Outcome(status="aborted", reason=state.aborted)
        if state.probs is None:  # unjudged: the longer last speech wins (a deterministic rule)
            lens = {p: max([len(e.content) for e in state.events if e.player == p] or [0]) for p in state.sides}
            best = max(lens.values(), default=0)
            rewards = {p: float(v == best) for p, v in lens.items()}
            return Outcome(rewards=rewards, winner=max(lens, key=lens.get) if lens else None)
        rewards = {p: float(state.probs.get(p, 0.0)) for p in state.sides}
        winner = max(state.probs, key=state.probs.get)
        correct = next((p for p, s in state.sides.items() if s == state.instance.correct), None)
        return Outcome(rewards=rewards, winner=winner, metrics={"judge_correct": winner == correct})

    def events(self, state: ToyState) -> list[Event]:
        return list(state.events)

    def fork(self, state: ToyState) -> ToyState:
        # Not deepcopy: seats hold PromptSets (compiled templates), which are shared, not copied.
        return dataclasses.replace(state, events=list(state.events), sides=dict(state.sides))

    def evaluation(self, state: ToyState, evaluator: str):
        if not self.config.judged:
            return None
        return self.observation(state, evaluator), self.action_spec(state, evaluator)

    def record_state(self, state: ToyState) -> dict:
        return {"sides": dict(state.sides)}

    def load_instances(self, dataset, base_dir):
        return toy_instances(dataset, base_dir)


def toy_instances(ds, base_dir) -> list[ToyInstance]:
    """`dataset: {name: toy, args: {n: 10}}` — seeded questions."""
    from sparring.config_io import strict_args

    class Args(Strict):
        n: int = Field(10, ge=1)

    args = strict_args(Args, ds.args)
    if ds.name != "toy":
        from sparring.errors import UnknownNameError

        raise UnknownNameError("toy dataset", ds.name, ["toy"])
    rng = random.Random(ds.seed or 0)
    return [ToyInstance(id=f"q{i}", question=f"Which is bigger, {i}a or {i}b?",
                        answers=[f"{i}a", f"{i}b"], correct=rng.randrange(2)) for i in range(args.n)]


def which_worker(request) -> str:
    """A scripted reply naming the process that played it; worker 0 is made slow (dealing tests)."""
    import multiprocessing
    import time

    name = multiprocessing.current_process().name
    if name.endswith("-0"):
        time.sleep(0.15)
    return f"played by {name}"


_CALLS = {"n": 0}


def dies_in_worker_0(request) -> str:
    """A scripted reply; worker 0's process dies abruptly on its third call (crash tests)."""
    import multiprocessing
    import os

    if multiprocessing.current_process().name.endswith("-0"):
        _CALLS["n"] += 1
        if _CALLS["n"] == 3:
            os._exit(3)
    return "still here"


BIG_REPLY = 1_000_000  # characters: its episode's message is many times a pipe's buffer


def dies_sending_in_worker_0(request) -> str:
    """A scripted reply; worker 0's third one is BIG_REPLY long, and the worker process is killed
    (SIGKILL) in the middle of sending the message that carries its episode (crash tests)."""
    import multiprocessing

    if multiprocessing.current_process().name.endswith("-0"):
        _CALLS["sending"] = _CALLS.get("sending", 0) + 1
        if _CALLS["sending"] == 3:
            _cut_off_big_messages()
            return "x" * BIG_REPLY
    return "still here"


def _cut_off_big_messages() -> None:
    """From now on, when this process writes more than 100 KB at once to a pipe connection, half
    of it goes out and the process SIGKILLs itself with the rest unsent: a kill at the worst
    instant, made deterministic. Hooked where `Connection.send` and `send_bytes` (the latter also
    behind a multiprocessing queue's feeder thread) write: after the message's length header,
    in the write of its bytes. `_send` is CPython's, on POSIX: if it ever goes, nothing is cut
    off and the death tests fail (the run completes), they do not pass quietly."""
    import os
    import signal
    from multiprocessing.connection import Connection

    write = Connection._send

    def cut_off(self, buf, *args):
        if len(buf) <= 100_000:
            return write(self, buf, *args)
        view = memoryview(buf)[: len(buf) // 2]
        while view:
            view = view[os.write(self.fileno(), view):]
        os.kill(os.getpid(), signal.SIGKILL)

    Connection._send = cut_off


def gone_in_worker_0(request) -> str:
    """A scripted reply; in worker 0, a server that is gone (its circuit breaker stops the run)."""
    import multiprocessing

    from sparring.errors import ServerGoneError

    if multiprocessing.current_process().name.endswith("-0"):
        raise ServerGoneError("toy server is unreachable")
    return "still here"
