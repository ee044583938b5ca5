"""Taboo as in clembench: a describer makes a guesser find a target word in up to three rounds.

Each round the describer gives a clue (`CLUE: ...`) that must not say the target or any taboo word
in any inflected form (stems, `stems.py`); the guesser answers `GUESS: word`. A taboo word in a
clue ends the episode at once (aborted; the clue is never shown to the guesser). A malformed
reply gets a correction and a retry only while fewer than `max_errors` came in a row — the
default 1 aborts at the first, as clembench does.

Quality score: 100 / n for success in round n, 0 otherwise (clembench); both players get
quality / 100 as reward (the game is cooperative, so nobody is ranked).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from sparring.errors import ConfigError
from sparring.gameapi.game import (
    ACCEPTED,
    Action,
    ActionSpec,
    DatasetConfig,
    Event,
    Feedback,
    Game,
    Outcome,
    Seat,
    register_game,
)
from sparring.games.taboo.hooks import HOOKS
from sparring.games.taboo.instance import TabooInstance, load_taboo_instances
from sparring.games.taboo.stems import Violation, find_violation, tokens
from sparring.prompts import PromptSet
from sparring.types import Message, Strict

DESCRIBER, GUESSER = "Describer", "Guesser"
SPECS = {"clue": ActionSpec(kind="text", tag="clue"), "guess": ActionSpec(kind="text", tag="guess")}
PREFILLED = {"clue": ActionSpec(kind="text", tag="clue", assistant_prefix="CLUE: "),
             "guess": ActionSpec(kind="text", tag="guess", assistant_prefix="GUESS: ")}
_CLUE = re.compile(r"^\s*\**\s*clue\s*\**\s*:\s*", re.IGNORECASE)
_GUESS = re.compile(r"guess\s*\**\s*:\s*(.*)", re.IGNORECASE)


class TabooConfig(Strict):
    """`game_args` of a Taboo experiment."""

    max_rounds: int = Field(3, ge=1, le=10, description="describer/guesser rounds")
    max_errors: int = Field(1, ge=1, description="malformed replies in a row that abort (1 = clembench)")
    # Small models rarely follow the format: with `prefill`, every reply starts with "CLUE: " or
    # "GUESS: " already and the model writes only the rest (the rules stay the same).
    prefill: bool = False


class MalformedReply(ValueError):
    pass


@dataclass
class TabooState:
    instance: TabooInstance
    prompts: dict[str, PromptSet]
    views: dict[str, list[Message]]
    talk: dict[str, list[Message]] = field(default_factory=dict)  # the conversation view: see `conversation`
    to_move: str = DESCRIBER
    clues: list[str] = field(default_factory=list)
    guesses: list[str] = field(default_factory=list)
    pending: dict[str, tuple[str, str]] = field(default_factory=dict)
    errors_in_row: int = 0
    n_invalid: dict[str, int] = field(default_factory=lambda: {DESCRIBER: 0, GUESSER: 0})
    events: list[Event] = field(default_factory=list)
    violation: Violation | None = None
    over: bool = False
    end: str | None = None          # success | failure | aborted
    abort_kind: str | None = None   # taboo_word | malformed_clue | malformed_guess
    abort_reason: str | None = None


def parse_clue(text: str) -> str:
    clue = _CLUE.sub("", text.strip(), count=1).strip()
    if not clue:
        raise MalformedReply("the description is empty")
    return clue


def parse_guess(text: str) -> str:
    """The one word after the first non-empty `GUESS:` line."""
    found = [m.group(1).strip() for m in (_GUESS.search(line) for line in text.splitlines()) if m is not None]
    if not found:
        raise MalformedReply("no line of the form GUESS: word")
    said = next((f for f in found if f), "")
    words = tokens(said)
    if len(words) != 1:
        raise MalformedReply(f"a guess is exactly one word, got {said!r}" if words else "the guess is empty")
    return words[0]


@register_game("taboo")
class TabooGame(Game[TabooInstance, TabooState]):
    name: ClassVar[str] = "taboo"
    Config = TabooConfig
    InstanceType = TabooInstance
    default_prompts: dict[str, str] = {"describer": "taboo", "guesser": "taboo"}
    hooks = HOOKS
    ranking: ClassVar[Literal["reward", "none"]] = "none"
    config: TabooConfig

    def players(self) -> dict[str, str]:
        return {DESCRIBER: "describer", GUESSER: "guesser"}

    def reset(self, instance: TabooInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> TabooState:
        missing = [p for p in self.players() if p not in seats]
        if missing:
            raise ConfigError(f"taboo needs seats for {DESCRIBER} and {GUESSER}; missing {', '.join(missing)}")
        state = TabooState(instance=instance, prompts={p: seats[p].prompts for p in self.players()}, views={})
        state.views[DESCRIBER] = [
            Message(role="system", content=self._render(state, DESCRIBER, "describer_system", secret=True)),
            Message(role="user", content=self._render(state, DESCRIBER, "describer_first", secret=True))]
        state.views[GUESSER] = [Message(role="system", content=self._render(state, GUESSER, "guesser_system"))]
        state.talk = {p: list(v) for p, v in state.views.items()}
        return state

    def _render(self, state: TabooState, player: str, tag: str, secret: bool = False, **extra: Any) -> str:
        """Only describer templates (`secret`) get the target and taboo words."""
        base: dict[str, Any] = {"max_rounds": self.config.max_rounds, "round": max(len(state.clues), 1),
                                "rounds_left": self.config.max_rounds - len(state.guesses)}
        if secret:
            base.update(target=state.instance.target, taboo=list(state.instance.taboo))
        return state.prompts[player].render(tag, 0, **base, **extra)

    # -- turn structure ---------------------------------------------------------------------
    def to_act(self, state: TabooState) -> list[str]:
        return [] if state.over else [state.to_move]

    def is_over(self, state: TabooState) -> bool:
        return state.over

    def action_spec(self, state: TabooState, player: str) -> ActionSpec:
        return (PREFILLED if self.config.prefill else SPECS)["clue" if player == DESCRIBER else "guess"]

    def observation(self, state: TabooState, player: str) -> list[Message]:
        msgs = list(state.views[player])
        bad = state.pending.get(player)
        if bad is not None:
            msgs += [Message(role="assistant", content=bad[0]), Message(role="user", content=bad[1])]
        return msgs

    def conversation(self, state: TabooState, player: str) -> list[Message]:
        """The game as a chat that only grows: the rendered view's messages, but each reply as the
        model wrote it (a prefilled reply with its prefix) and a rejected reply with its correction
        kept where they came (the rendered view drops them once the retry is accepted)."""
        return list(state.talk[player])

    def _show(self, state: TabooState, player: str, content: str) -> None:
        """A new user message for `player`, in both views."""
        message = Message(role="user", content=content)
        state.views[player].append(message)
        state.talk[player].append(message)

    # -- acting -----------------------------------------------------------------------------
    def act(self, state: TabooState, player: str, action: Action) -> Feedback:
        if state.over:
            return Feedback(accepted=False, abort="the game is already over")
        if player != state.to_move:
            raise ValueError(f"{player} acted out of turn (to move: {state.to_move})")
        raw = (action.text or "").strip()
        prefix = self.action_spec(state, player).assistant_prefix
        state.talk[player].append(Message(role="assistant", content=(prefix or "") + (action.text or "")))
        if prefix and not raw.lower().startswith(prefix.strip().lower()):
            raw = prefix + raw  # the reply continued the prefilled marker
        try:
            move = parse_clue(raw) if player == DESCRIBER else parse_guess(raw)
        except MalformedReply as err:
            return self._reject(state, player, raw, str(err))
        state.errors_in_row = 0
        state.pending.pop(player, None)
        if player == DESCRIBER:
            return self._clue(state, raw, move)
        self._guess(state, raw, move)
        return ACCEPTED

    def _clue(self, state: TabooState, raw: str, clue: str) -> Feedback:
        inst = state.instance
        v = find_violation(clue, inst.target, inst.taboo)
        if v is not None:
            state.violation = v
            what = "the target word" if v.kind == "target" else f"the taboo word {v.matched!r}"
            reason = f"{DESCRIBER} used {what} (wrote {v.word!r})"
            self._event(state, DESCRIBER, "violation", raw, [DESCRIBER], word=v.word, matched=v.matched,
                        kind=v.kind, exclude_from_training=True)
            self._end(state, "aborted", abort_kind="taboo_word", reason=reason)
            return Feedback(accepted=False, abort=reason)
        state.clues.append(clue)
        state.views[DESCRIBER].append(Message(role="assistant", content=raw))
        self._event(state, DESCRIBER, "clue", clue, None)
        self._show(state, GUESSER, self._render(state, GUESSER, "guesser_clue", clue=clue))
        state.to_move = GUESSER
        return ACCEPTED

    def _guess(self, state: TabooState, raw: str, guess: str) -> None:
        correct = guess.lower() == state.instance.target.strip().lower()
        self._event(state, GUESSER, "guess", guess, None, correct=correct)
        state.guesses.append(guess)
        state.views[GUESSER].append(Message(role="assistant", content=raw))
        if correct:
            self._end(state, "success")
        elif len(state.guesses) >= self.config.max_rounds:
            self._end(state, "failure")
        else:
            self._show(state, DESCRIBER, self._render(state, DESCRIBER, "describer_next", secret=True, guess=guess))
            state.to_move = DESCRIBER

    def _end(self, state: TabooState, end: str, abort_kind: str | None = None, reason: str | None = None) -> None:
        state.over, state.end, state.abort_kind, state.abort_reason = True, end, abort_kind, reason
        if reason:
            self._event(state, "game", "abort", reason, None, kind=abort_kind)

    def _event(self, state: TabooState, player: str, tag: str, content: str, visible_to: list[str] | None,
               **meta: Any) -> None:
        state.events.append(Event(index=len(state.events), player=player, tag=tag, content=content,
                                  visible_to=visible_to, round=len(state.guesses) + 1, meta=meta))

    def _reject(self, state: TabooState, player: str, raw: str, detail: str) -> Feedback:
        state.errors_in_row += 1
        state.n_invalid[player] += 1
        kind = "clue" if player == DESCRIBER else "guess"
        correction = self._render(state, player, f"correction_{kind}", secret=player == DESCRIBER, detail=detail)
        meta = {"error": f"malformed_{kind}", "detail": detail, "attempt": state.errors_in_row,
                "exclude_from_training": True}
        self._event(state, player, "invalid", raw, [player], **meta)
        if state.errors_in_row >= self.config.max_errors:
            reason = f"{player}: malformed {kind} ({detail})"
            state.pending.pop(player, None)
            self._end(state, "aborted", abort_kind=f"malformed_{kind}", reason=reason)
            return Feedback(accepted=False, correction=correction, abort=reason)
        self._event(state, player, "correction", correction, [player], **meta)
        state.pending[player] = (raw, correction)
        state.talk[player].append(Message(role="user", content=correction))
        return Feedback(accepted=False, correction=correction)

    # -- results ----------------------------------------------------------------------------
    def outcome(self, state: TabooState) -> Outcome:
        success = state.end == "success"
        n = len(state.guesses)
        quality = 100.0 / n if success else 0.0
        v = state.violation
        metrics: dict[str, Any] = {
            "format": self.name, "target": state.instance.target, "band": state.instance.band,
            "end": state.end or "unfinished", "success": success, "lose": state.end == "failure",
            "aborted": state.end == "aborted", "played": state.end != "aborted", "quality_score": quality,
            "rounds": n, "n_guesses": n, "guesses": list(state.guesses), "clues": list(state.clues),
            "abort_kind": state.abort_kind,
            "violation": None if v is None else {"player": DESCRIBER, "word": v.word, "matched": v.matched,
                                                 "kind": v.kind},
            "n_invalid": dict(state.n_invalid), "n_invalid_total": sum(state.n_invalid.values()),
        }
        rewards = dict.fromkeys(self.players(), quality / 100.0)
        if state.end == "aborted":
            return Outcome(rewards=rewards, status="aborted", reason=state.abort_reason, metrics=metrics)
        reason = f"guessed in round {n}" if success else f"not guessed in {self.config.max_rounds} rounds"
        return Outcome(rewards=rewards, status="complete", reason=reason if state.over else "unfinished",
                       metrics=metrics)

    def events(self, state: TabooState) -> list[Event]:
        return list(state.events)

    def fork(self, state: TabooState) -> TabooState:
        """Cheap copy for look-ahead: lists are copied, messages and prompt sets shared (immutable)."""
        return replace(state, views={p: list(v) for p, v in state.views.items()},
                       talk={p: list(v) for p, v in state.talk.items()}, clues=list(state.clues),
                       guesses=list(state.guesses), pending=dict(state.pending), n_invalid=dict(state.n_invalid),
                       events=list(state.events))

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[TabooInstance]:
        """Sources: `taboo_words` (shipped, args.bands) and `clembench` (args.path)."""
        return load_taboo_instances(dataset, base_dir)

    def instance_summary(self, instance: TabooInstance) -> dict[str, Any]:
        return {"id": instance.id, "target": instance.target, "taboo": list(instance.taboo),
                "band": instance.band, "metadata": dict(instance.metadata)}

    def record_state(self, state: TabooState) -> dict[str, Any]:
        return {"max_rounds": self.config.max_rounds}
