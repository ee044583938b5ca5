"""Wordle as in clembench: six guesses of a five-letter word, letter feedback after each one.

`wordle` has one seat, the Guesser. `wordle_withcritic` adds a Critic: each turn the guesser
proposes a word with an explanation, the critic (who does not know the answer either) says keep
or change, and the guesser then gives the final guess, which is the one scored.

Invalid replies (no `GUESS:`, not five letters, not in the word list, no verdict) get a correction
shown only to the actor, who retries; `max_errors` invalid replies in a row abort the episode.
Quality score: 100 / n for a win at guess n, 0 otherwise (clembench's scale); rewards are
quality / 100 for every seat. Metrics also give the information each feedback gave: log2 of how
much it shrank the set of possible answers (the answer list, consistent with all feedback so far).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

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
from sparring.games.wordle.feedback import consistent, describe, information_gain, is_win, score_guess
from sparring.games.wordle.hooks import HOOKS
from sparring.games.wordle.instance import WordleInstance, load_wordle_instances
from sparring.games.wordle.protocol import ParseError, parse_guess, parse_verdict
from sparring.games.wordle.state import CRITIC, GUESSER, Guess, WordleState
from sparring.games.wordle.words import WORD_LENGTH, Lexicon
from sparring.types import Message, Strict

SPECS = {tag: ActionSpec(kind="text", tag=tag) for tag in ("guess", "final_guess", "critic")}
_PREFIXES = {"guess": "GUESS: ", "final_guess": "GUESS: ", "critic": "VERDICT: "}
PREFILLED = {tag: ActionSpec(kind="text", tag=tag, assistant_prefix=_PREFIXES[tag]) for tag in SPECS}


class WordleConfig(Strict):
    """`game_args` of a Wordle experiment."""

    max_guesses: int = Field(6, ge=1, le=20)
    max_errors: int = Field(3, ge=1, description="invalid replies in a row that abort the episode")
    allow_any_word: bool = Field(False, description="accept any five letters, not only words of the list")
    # Small models rarely follow the format: with `prefill`, a guess starts with "GUESS: " and a
    # verdict with "VERDICT: " already (no explanation); the model writes only the rest.
    prefill: bool = False
    # tools: the guesser's prompts ask for each guess as a call of the tool guess(word) (what TRL's
    # environment_factory gives a learner); a call is played as its text form "GUESS: word"
    action_format: Literal["text", "tools"] = "text"

    @model_validator(mode="after")
    def _check_format(self) -> WordleConfig:
        if self.prefill and self.action_format == "tools":
            raise ValueError("prefill starts a text reply with 'GUESS: '; with action_format 'tools' a guess is a "
                             "call to guess")
        return self


@register_game("wordle")
class WordleGame(Game[WordleInstance, WordleState]):
    name: ClassVar[str] = "wordle"
    Config = WordleConfig
    InstanceType = WordleInstance
    default_prompts: dict[str, str] = {"guesser": "wordle"}
    ranking: ClassVar[Literal["reward", "none"]] = "none"
    with_critic: ClassVar[bool] = False
    hooks = HOOKS
    config: WordleConfig

    def __init__(self, config: WordleConfig | None = None):
        super().__init__(config)
        self._lexicon: Lexicon | None = None

    @property
    def lexicon(self) -> Lexicon:
        if self._lexicon is None:  # read once per game object (one run), on first use
            self._lexicon = Lexicon.shipped()
        return self._lexicon

    def players(self) -> dict[str, str]:
        return {GUESSER: "guesser", CRITIC: "critic"} if self.with_critic else {GUESSER: "guesser"}

    # -- setup ------------------------------------------------------------------------------
    def reset(self, instance: WordleInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> WordleState:
        missing = [p for p in self.players() if p not in seats]
        if missing:
            raise ConfigError(f"{self.name} needs seats for {', '.join(self.players())}; missing {', '.join(missing)}")
        lex = self.lexicon
        candidates = list(lex.targets)
        if instance.target not in lex.guesses:
            candidates.append(instance.target)
        prompts = {p: seats[p].prompts for p in self.players()}
        state = WordleState(instance=instance, prompts=prompts, candidates=candidates, views={},
                            n_invalid=dict.fromkeys(self.players(), 0))
        state.views[GUESSER] = [Message(role="system", content=self._render(state, GUESSER, "guesser_system")),
                                Message(role="user", content=self._turn_prompt(state))]
        if self.with_critic:
            state.views[CRITIC] = [Message(role="system", content=self._render(state, CRITIC, "critic_system"))]
        state.talk = {p: list(v) for p, v in state.views.items()}
        return state

    def _render(self, state: WordleState, player: str, tag: str, **extra: Any) -> str:
        n = len(state.guesses) + 1
        return state.prompts[player].render(tag, 0, max_guesses=self.config.max_guesses, critic=self.with_critic,
                                            prefill=self.config.prefill, tools=self.config.action_format == "tools", n=n,
                                            guesses_left=self.config.max_guesses - n + 1, **extra)

    def _turn_prompt(self, state: WordleState) -> str:
        return self._render(state, GUESSER, "guesser_turn")

    # -- turn structure ---------------------------------------------------------------------
    def to_act(self, state: WordleState) -> list[str]:
        if state.over:
            return []
        return [CRITIC] if state.phase == "critic" else [GUESSER]

    def is_over(self, state: WordleState) -> bool:
        return state.over

    def action_spec(self, state: WordleState, player: str) -> ActionSpec:
        specs = PREFILLED if self.config.prefill else SPECS
        if player == CRITIC:
            return specs["critic"]
        return specs["final_guess" if state.phase == "final" else "guess"]

    def observation(self, state: WordleState, player: str) -> list[Message]:
        msgs = list(state.views.get(player, []))
        bad = state.pending.get(player)
        if bad is not None:
            msgs += [Message(role="assistant", content=bad[0]), Message(role="user", content=bad[1])]
        return msgs

    def conversation(self, state: WordleState, player: str) -> list[Message]:
        """The game as a chat that only grows: the rendered view's messages, but each reply as the
        model wrote it (a prefilled reply with its prefix) and a rejected reply with its correction
        kept where they came (the rendered view drops them once the retry is accepted)."""
        return list(state.talk.get(player, []))

    def _show(self, state: WordleState, player: str, content: str) -> None:
        """A new user message for `player`, in both views."""
        message = Message(role="user", content=content)
        state.views[player].append(message)
        state.talk[player].append(message)

    # -- acting -----------------------------------------------------------------------------
    def act(self, state: WordleState, player: str, action: Action) -> Feedback:
        if state.over:
            return Feedback(accepted=False, abort="the game is already over")
        if player not in self.to_act(state):
            raise ValueError(f"{player} acted out of turn (to act: {self.to_act(state)})")
        raw = (action.text or "").strip()
        prefix = self.action_spec(state, player).assistant_prefix
        state.talk[player].append(Message(role="assistant", content=(prefix or "") + (action.text or "")))
        if prefix and not raw.lower().startswith(prefix.strip().lower()):
            raw = prefix + raw  # the reply continued the prefilled marker
        try:
            if player == CRITIC:
                verdict = parse_verdict(raw)
            else:
                parsed = parse_guess(raw)
                self._check_word(state, parsed.word)
        except ParseError as err:
            return self._reject(state, player, raw, err)
        state.errors_in_row = 0
        state.pending.pop(player, None)
        state.views[player].append(Message(role="assistant", content=raw))
        tag = self.action_spec(state, player).tag
        if player == CRITIC:
            state.verdict = verdict
            self._event(state, player, tag, raw, verdict=verdict[0])
            self._show(state, GUESSER, self._render(state, GUESSER, "guesser_final", verdict=verdict[0],
                                                    reason=verdict[1]))
            state.phase = "final"
        elif self.with_critic and state.phase == "guess":
            state.proposal = (parsed.word, parsed.explanation)
            self._event(state, player, tag, raw, word=parsed.word, explanation=parsed.explanation)
            history = [{"word": g.word.upper(), "letters": describe(g.word, g.pattern)} for g in state.guesses]
            self._show(state, CRITIC, self._render(state, CRITIC, "critic_turn", history=history,
                                                   proposal=parsed.word.upper(), explanation=parsed.explanation))
            state.phase = "critic"
        else:
            self._score(state, player, tag, raw, parsed.word, parsed.explanation)
        return ACCEPTED

    def _check_word(self, state: WordleState, word: str) -> None:
        if len(word) != WORD_LENGTH:
            raise ParseError("length", f"it has {len(word)} letters, not {WORD_LENGTH}")
        if not self.config.allow_any_word and word not in self.lexicon.guesses and word != state.instance.target:
            raise ParseError("unknown", f"{word!r} is not in the word list")

    def _score(self, state: WordleState, player: str, tag: str, raw: str, word: str, explanation: str) -> None:
        pattern = score_guess(word, state.instance.target)
        before = len(state.candidates)
        state.candidates = consistent(state.candidates, word, pattern)
        gain = information_gain(before, len(state.candidates))
        proposal = state.proposal[0] if state.proposal else None
        verdict = state.verdict[0] if state.verdict else None
        state.guesses.append(Guess(word=word, pattern=pattern, explanation=explanation, proposal=proposal,
                                   verdict=verdict, remaining=len(state.candidates), gain=gain))
        state.proposal = state.verdict = None
        self._event(state, player, tag, raw, word=word, pattern=pattern, remaining=len(state.candidates),
                    info_gain=gain, proposal=proposal, verdict=verdict)
        feedback = self._render(state, GUESSER, "feedback", word=word.upper(), pattern=pattern,
                                letters=describe(word, pattern))
        self._event(state, "game", "feedback", feedback, pattern=pattern)
        if is_win(pattern):
            state.over, state.end = True, "win"
        elif len(state.guesses) >= self.config.max_guesses:
            state.over, state.end = True, "loss"
        else:
            self._show(state, GUESSER, f"{feedback}\n{self._turn_prompt(state)}")
            state.phase = "guess"

    def _event(self, state: WordleState, player: str, tag: str, content: str,
               visible_to: list[str] | None = None, **meta: Any) -> None:
        state.events.append(Event(index=len(state.events), player=player, tag=tag, content=content,
                                  visible_to=visible_to, round=len(state.guesses), meta=meta))

    def _reject(self, state: WordleState, player: str, raw: str, err: ParseError) -> Feedback:
        state.errors_in_row += 1
        state.n_invalid[player] = state.n_invalid.get(player, 0) + 1
        word = ""
        if err.code in ("length", "unknown"):
            word = parse_guess(raw).word.upper()
        correction = self._render(state, player, f"correction_{err.code}", detail=err.detail, word=word)
        meta = {"error": err.code, "detail": err.detail, "attempt": state.errors_in_row, "exclude_from_training": True}
        self._event(state, player, "invalid", raw, [player], **meta)
        self._event(state, player, "correction", correction, [player], **meta)
        if state.errors_in_row >= self.config.max_errors:
            reason = f"{player} produced {state.errors_in_row} invalid replies in a row (last: {err.detail})"
            state.over, state.end, state.abort_reason = True, "aborted", reason
            state.pending.pop(player, None)
            self._event(state, player, "abort", reason)
            return Feedback(accepted=False, correction=correction, abort=reason)
        state.pending[player] = (raw, correction)
        state.talk[player].append(Message(role="user", content=correction))
        return Feedback(accepted=False, correction=correction)

    # -- results ----------------------------------------------------------------------------
    def outcome(self, state: WordleState) -> Outcome:
        n = len(state.guesses)
        win = state.end == "win"
        quality = 100.0 / n if win else 0.0
        gains = [g.gain for g in state.guesses]
        metrics: dict[str, Any] = {
            "format": self.name, "target": state.instance.target, "end": state.end or "unfinished",
            "success": win, "lose": state.end == "loss", "aborted": state.end == "aborted",
            "played": state.end != "aborted", "quality_score": quality, "n_guesses": n,
            "guesses": [g.word for g in state.guesses], "patterns": [g.pattern for g in state.guesses],
            "info_gain": gains, "mean_info_gain": sum(gains) / len(gains) if gains else None,
            "total_info_gain": sum(gains), "remaining": [g.remaining for g in state.guesses],
            "n_invalid": dict(state.n_invalid), "n_invalid_total": sum(state.n_invalid.values()),
        }
        if self.with_critic:
            verdicts = [g.verdict for g in state.guesses if g.verdict]
            changed = [g.proposal != g.word for g in state.guesses if g.proposal]
            metrics.update(critic_keep=verdicts.count("keep"), critic_change=verdicts.count("change"),
                           guesser_changed=sum(changed),
                           followed_critic=sum((g.verdict == "change") == (g.proposal != g.word)
                                               for g in state.guesses if g.verdict and g.proposal))
        rewards = dict.fromkeys(self.players(), quality / 100.0)
        if state.end == "aborted":
            return Outcome(rewards=rewards, status="aborted", reason=state.abort_reason, metrics=metrics)
        reason = f"solved in {n}" if win else f"not solved in {self.config.max_guesses} guesses"
        return Outcome(rewards=rewards, status="complete", reason=reason if state.over else "unfinished",
                       metrics=metrics)

    def events(self, state: WordleState) -> list[Event]:
        return list(state.events)

    def fork(self, state: WordleState) -> WordleState:
        """Cheap copy for look-ahead: lists are copied, messages and prompt sets shared (immutable)."""
        return replace(state, candidates=list(state.candidates), views={p: list(v) for p, v in state.views.items()},
                       talk={p: list(v) for p, v in state.talk.items()}, guesses=list(state.guesses),
                       pending=dict(state.pending), n_invalid=dict(state.n_invalid),
                       events=list(state.events), extra=dict(state.extra))

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[WordleInstance]:
        """Sources: `words` (shipped answers), `list` (args.targets) and `clembench` (args.path)."""
        return load_wordle_instances(dataset, base_dir)

    def instance_summary(self, instance: WordleInstance) -> dict[str, Any]:
        return {"id": instance.id, "target": instance.target, "metadata": dict(instance.metadata)}

    def record_state(self, state: WordleState) -> dict[str, Any]:
        return {"max_guesses": self.config.max_guesses, "critic": self.with_critic}


@register_game("wordle_withcritic")
class WordleWithCriticGame(WordleGame):
    """Wordle with a critic seat that reviews each proposed guess before the final one."""

    name: ClassVar[str] = "wordle_withcritic"
    default_prompts: dict[str, str] = {"guesser": "wordle", "critic": "wordle"}
    with_critic: ClassVar[bool] = True
