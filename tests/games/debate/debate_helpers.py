"""Shared helpers for the debate-game tests (a module, not a conftest, so tests can import it)."""

from __future__ import annotations

import random
from typing import Any

from sparring.gameapi.game import Action, Seat
from sparring.games.debate.game import DebateGame
from sparring.games.debate.instance import DebateInstance
from sparring.prompts import prompt_set

STORY = ("Mara Quill lives in Dunmere, in a narrow house near the square. She keeps a copper kettle "
         "by the window. Tobin Harrow lives in Kelderby and works as a baker.")


def instance(**kw: Any) -> DebateInstance:
    base = dict(id="q1", question="Where does Mara Quill live?", answers=["Dunmere", "Kelderby"], correct=0,
                background=STORY)
    base.update(kw)
    return DebateInstance(**base)


def game(**cfg: Any) -> DebateGame:
    return DebateGame(DebateGame.Config(**cfg))


def seats(g: DebateGame, overrides: dict[str, Any] | None = None) -> dict[str, Seat]:
    out = {}
    for p, role in g.players().items():
        ps = prompt_set(g.default_prompts[role])
        if overrides and p in overrides:
            ps = ps.with_overrides(overrides[p])
        out[p] = Seat(player=p, agent=f"agent_{p}", prompts=ps)
    return out


def start(g: DebateGame, inst: DebateInstance | None = None, *, flip: bool = False, seed: int = 0,
          overrides: dict[str, Any] | None = None):
    return g.reset(inst or instance(), seats(g, overrides), random.Random(seed), flip=flip)


def speech(player: str, rnd: int) -> str:
    return f"{player} speech {rnd}"


def play(g: DebateGame, st, verdict: dict[str, float] | None = None, choose: str = "A",
         texts: dict[str, str] | None = None) -> list[tuple[tuple[str, ...], str]]:
    """Play to the end with canned actions; returns the (players, tag) sequence of turns."""
    turns = []
    counts: dict[str, int] = {}
    while not g.is_over(st):
        who = tuple(g.to_act(st))
        specs = {p: g.action_spec(st, p) for p in who}
        turns.append((who, specs[who[0]].tag))
        for p in who:
            spec = specs[p]
            if spec.kind == "choice":
                probs = verdict or {spec.options[0]: 0.8, spec.options[1]: 0.2}
                fb = g.act(st, p, Action(probs=probs))
            elif spec.tag == "choose":
                fb = g.act(st, p, Action(text=choose))
            else:
                counts[p] = counts.get(p, 0) + 1
                texts = texts or {}
                text = texts.get(f"{p}:{spec.tag}", texts.get(p, speech(p, counts[p])))
                fb = g.act(st, p, Action(text=text))
            assert fb.accepted, fb
    return turns
