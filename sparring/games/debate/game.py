"""The debate game family: debate, consultancy, double consultancy, open debate, naive judge.

Rules only: the game assigns sides, orders turns, decides who sees what, validates quotes and
verdicts, and turns the judge's probabilities into rewards and metrics. It never calls a model.
"""

from __future__ import annotations

import hashlib
import random
import re
import weakref
from pathlib import Path
from typing import Any, ClassVar

from sparring.choice import normalize_probs, parse_answer_choice, parse_choice
from sparring.errors import ConfigError, EpisodeAbort
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
from sparring.games.debate import views
from sparring.games.debate.background import fit_background
from sparring.games.debate.config import DebateConfig
from sparring.games.debate.demonstrator import POSITION_LABEL, STORY_LABEL
from sparring.games.debate.hooks import HOOKS
from sparring.games.debate.instance import DebateInstance
from sparring.games.debate.metrics import episode_metrics
from sparring.games.debate.quotes import validate_quotes
from sparring.games.debate.schedule import JUDGE, build_schedule
from sparring.games.debate.state import LETTERS, DebateState
from sparring.prompts.memo import RenderMemo
from sparring.types import Message, new

SCORE_OPTIONS = [" A", " B"]
_WORDS = re.compile(r"\S+")


def _unit(*parts: object) -> float:
    """A uniform number in [0, 1) from a stable hash (independent of any RNG state)."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@register_game("debate")
class DebateGame(Game[DebateInstance, DebateState]):
    name: ClassVar[str] = "debate"
    Config: ClassVar[type[DebateConfig]] = DebateConfig
    InstanceType: ClassVar[type[DebateInstance]] = DebateInstance

    evaluator_roles: ClassVar[frozenset[str]] = frozenset({"judge"})
    default_prompts: dict[str, str] = {"debater": "debate", "judge": "judge"}
    hooks = HOOKS

    def __init__(self, config: DebateConfig | None = None):
        super().__init__(config)
        self.config: DebateConfig
        # the built-in set written for the configured format (instance attribute shadows the class one)
        self.default_prompts = {"debater": self._suggest("debater"), "judge": self._suggest("judge")}
        self._checked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._text_specs: dict[tuple, ActionSpec] = {}  # specs are frozen: one object per (tag, scratchpad)
        self._summaries: dict[str, dict[str, Any]] = {}
        self._schedule: tuple | None = None
        self.memo = RenderMemo()  # renders of this game's prompts, for the run that owns the game
        self._players = {**{d: "debater" for d in self.config.debaters}, JUDGE: "judge"}

    # -- structure --------------------------------------------------------------------------
    def players(self) -> dict[str, str]:
        return dict(self._players)

    def reset(self, instance: DebateInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> DebateState:
        cfg = self.config
        missing = [p for p in self._players if p not in seats]
        if missing:
            raise ConfigError(f"format {cfg.format!r} needs seats {sorted(self.players())}; missing {missing}")
        self._check_prompts(seats)
        variant = cfg.variant if cfg.variant is not None else rng.randrange(1 << 30)

        def coin(salt: str) -> float:
            if cfg.assignment == "episode":
                return rng.random()
            return _unit(cfg.assignment_seed, salt, instance.id)

        shown, info = fit_background(instance.background, max_words=cfg.max_background_words,
                                     max_chars=cfg.max_background_chars, policy=cfg.background_policy,
                                     instance_id=instance.id)
        identity = (0, 1)
        judge_display: tuple[int, int] | None = identity
        debater_display = identity
        player_answer: dict[str, int] = {}
        consultant_correct = None
        if cfg.format in ("debate", "double_consultancy"):
            a = 0 if cfg.assignment == "fixed" else int(coin("sides") >= 0.5)
            a ^= int(flip)
            player_answer = {"Debater_A": a, "Debater_B": 1 - a}
            judge_display = debater_display = (a, 1 - a)
        elif cfg.format == "consultancy":
            if cfg.assignment == "fixed":
                ans = 0
            else:
                right = coin("consultant") < cfg.consultant_correct_prob
                ans = instance.correct if right else 1 - instance.correct
            ans ^= int(flip)
            player_answer = {"Consultant": ans}
            consultant_correct = ans == instance.correct
        elif cfg.format == "open_debate":
            debater_display = (1, 0) if flip else identity
            judge_display = None  # known once the chooser has picked
        else:  # empty
            judge_display = (1, 0) if flip else identity
        st = DebateState(instance=instance, seats=seats, flip=flip, variant=variant, background=shown,
                         background_info=info, steps=self._steps(), judge_display=judge_display,
                         debater_display=debater_display, player_answer=player_answer, side_answer={},
                         consultant_correct=consultant_correct, memo=self.memo)
        if judge_display is not None:
            self._set_sides(st)
        return st

    def _steps(self) -> list:
        """The format's turn order (the same for every episode: built once, copied per episode)."""
        if self._schedule is None:
            self._schedule = tuple(build_schedule(self.config))
        return list(self._schedule)

    def _set_sides(self, st: DebateState) -> None:
        cfg = self.config
        if cfg.format in ("consultancy", "empty"):
            st.side_answer = dict(zip(cfg.sides, st.judge_display or (0, 1), strict=True))
        else:
            st.side_answer = {d: st.player_answer[d] for d in cfg.sides}

    def _check_prompts(self, seats: dict[str, Seat]) -> None:
        cfg = self.config
        for player, role in self.players().items():
            ps = seats[player].prompts
            if self._checked.get(ps) == (cfg.format, role):
                continue
            if role == "judge":
                need = ["judge_system", "verdict", "verdict_prefix", "verdict_fallback", "verdict_correction"]
                need += ["speech_entry"] if cfg.debaters else []
                need += ["judge_question"] if cfg.judge_questions else []
                need += ["judge_reasoning"] if cfg.judge_reasoning else []
            else:
                need = ["debater_system", "speech", "speech_entry"]
                need += ["judge_question_entry"] if cfg.judge_questions else []
                need += ["choose", "choose_correction"] if cfg.format == "open_debate" else []
            lacking = [t for t in need if not ps.has(t)]
            if lacking:
                raise ConfigError(f"prompt set {ps.name!r} (seat {player}) lacks templates {lacking} "
                                  f"needed by format {cfg.format!r}; use the built-in set "
                                  f"{self._suggest(role)!r} or one that extends it", file=ps.source)
            meta = f"{role}_formats"
            if cfg.check_prompt_formats and ps.has(meta):
                allowed = [f.strip() for f in ps.render(meta).split(",") if f.strip()]
                if cfg.format not in allowed:
                    raise ConfigError(f"prompt set {ps.name!r} (seat {player}) is written for formats "
                                      f"{allowed}, not {cfg.format!r}; use {self._suggest(role)!r} "
                                      f"(or set check_prompt_formats: false)", file=ps.source)
            self._checked[ps] = (cfg.format, role)

    def _suggest(self, role: str) -> str:
        f = self.config.format
        if role == "judge":
            return "empty" if f == "empty" else "judge"
        return {"double_consultancy": "consultancy"}.get(f, f)

    def to_act(self, state: DebateState) -> list[str]:
        cur = state.current
        return [] if cur is None else [p for p in cur.players if p not in state.acted]

    def action_spec(self, state: DebateState, player: str) -> ActionSpec:
        cur = state.current
        if cur is None or player not in cur.players:
            raise EpisodeAbort(f"{player} has no action to take now")
        if cur.tag == "verdict":
            return self._verdict_spec(state)
        scratch = None
        seat = state.seats[player]
        if cur.tag == "speech" and seat.scratchpad and seat.prompts.has("scratchpad"):
            scratch = views.render(self.config, state, player, "scratchpad", cache_key=0, round=cur.round)
        key = (cur.tag, scratch)
        spec = self._text_specs.get(key)
        if spec is None:
            spec = self._text_specs[key] = ActionSpec(kind="text", tag=cur.tag, scratchpad_instruction=scratch)
            if len(self._text_specs) > 4096:
                self._text_specs.clear()
        return spec

    def _verdict_spec(self, st: DebateState, options: list[str] | None = None) -> ActionSpec:
        cfg = self.config
        options = options or list(cfg.sides)
        key = ("spec", JUDGE, "verdict", tuple(options))  # k[1] names the viewer, like rendered pieces
        if key in st.cache:
            return st.cache[key]
        prefix = views.render(cfg, st, JUDGE, "verdict_prefix", cache_key=0).rstrip()
        fallback = views.render(cfg, st, JUDGE, "verdict_fallback", cache_key=tuple(options),
                                side_a=options[0], side_b=options[1])
        spec = ActionSpec(kind="choice", tag="verdict", options=options, score_options=SCORE_OPTIONS,
                          assistant_prefix=prefix, fallback_instruction=fallback)
        st.cache[key] = spec
        return spec

    def observation(self, state: DebateState, player: str) -> list[Message]:
        return views.build_messages(self.config, state, player)

    def conversation(self, state: DebateState, player: str) -> list[Message]:
        """The rendered view already only grows (views.py); the conversation view differs only in
        showing each of the player's own replies as it wrote it (a speech over the word limit before
        the cut, untrimmed), so a game's calls join into one training sequence."""
        return views.build_messages(self.config, state, player, as_written=True)

    def request_labels(self, state: DebateState, player: str) -> dict[str, Any]:
        """A debater's position and the story it was shown, for the scripted demonstrator
        (`demonstrator.py`); nothing for the judge or before an open debate's choice."""
        answer = state.player_answer.get(player)
        if answer is None:
            return {}
        return {POSITION_LABEL: state.instance.answers[answer], STORY_LABEL: state.background}

    # -- acting -----------------------------------------------------------------------------
    def _event(self, st: DebateState, player: str, tag: str, content: str, *, visible_to=None,
               round: int | None = None, **meta: Any) -> Event:
        ev = new(Event, index=len(st.events), player=player, tag=tag, content=content,
                 visible_to=visible_to, round=round, meta={"step": st.step, **meta})
        st.events.append(ev)
        return ev

    def _reject(self, st: DebateState, player: str, attempt: str, error: str, tag: str,
                written: str | None = None) -> Feedback:
        n = st.invalid[player] = st.invalid.get(player, 0) + 1
        self._event(st, player, "rejected", attempt, visible_to=[player], error=error,
                    **views.as_written(written, attempt))
        if n > self.config.max_invalid_actions:
            st.abort = f"{player}: {error} (after {n} attempts)"
            return Feedback(accepted=False, abort=st.abort)
        text = views.render(self.config, st, player, tag, error=error, text=attempt)
        self._event(st, player, "correction", text, visible_to=[player])
        return Feedback(accepted=False, correction=text)

    def act(self, state: DebateState, player: str, action: Action) -> Feedback:
        st, cfg = state, self.config
        cur = st.current
        if cur is None or player not in cur.players or player in st.acted:
            raise EpisodeAbort(f"{player} acted out of turn (waiting for {self.to_act(st)})")
        if cur.tag == "verdict":
            return self._act_verdict(st, action)
        written = action.text or ""
        text = written.strip()
        if cur.tag == "choose":
            return self._act_choose(st, player, text, written)
        if cur.tag == "speech":
            meta: dict[str, Any] = {}
            words = _WORDS.findall(text)
            if cfg.enforce_word_limit and len(words) > cfg.speech_word_limit:
                meta["cut_from_words"] = len(words)
                words = words[: cfg.speech_word_limit]
                text = " ".join(words)
            report = validate_quotes(text, st.instance.background, fuzzy_threshold=cfg.fuzzy_threshold,
                                     max_quote_words=cfg.max_quote_words)
            vis = [player, JUDGE] if cfg.format == "double_consultancy" else None
            self._event(st, player, "speech", text, visible_to=vis, round=cur.round, marked=report.marked,
                        quotes=report.stats, quote_details=[q.as_dict() for q in report.quotes],
                        words=len(words), **meta, **views.as_written(written, text))
        elif cur.tag == "question":
            self._event(st, player, "question", text, round=cur.round, **views.as_written(written, text))
        elif cur.tag == "reasoning":
            self._event(st, player, "reasoning", text, visible_to=[JUDGE], round=cur.round,
                        words=len(_WORDS.findall(text)), **views.as_written(written, text))
        self._advance(st, player)
        return ACCEPTED

    def _advance(self, st: DebateState, player: str) -> None:
        st.acted.append(player)
        if st.current is not None and all(p in st.acted for p in st.current.players):
            st.step += 1
            st.acted = []

    def _act_choose(self, st: DebateState, player: str, text: str, written: str) -> Feedback:
        pick = parse_answer_choice(text, [st.instance.answers[i] for i in st.debater_display])
        if pick is None:
            return self._reject(st, player, text, "no single answer (A or B) could be read from the reply",
                                "choose_correction", written)
        ans = st.debater_display[pick]
        other = next(d for d in self.config.debaters if d != player)
        st.chosen = ans
        st.player_answer = {player: ans, other: 1 - ans}
        st.judge_display = (ans, 1 - ans) if player == "Debater_A" else (1 - ans, ans)
        self._set_sides(st)
        # positions are known now: forget anything rendered without them (the chooser's own
        # system prompt deliberately never states its position, so it stays)
        st.cache = {k: v for k, v in st.cache.items() if k[1] not in (other, JUDGE)}
        st.cache.pop(("vars", player), None)
        self._event(st, player, "choose", text, visible_to=[player], choice=LETTERS[pick], answer=ans,
                    correct=ans == st.instance.correct, **views.as_written(written, text))
        self._advance(st, player)
        return ACCEPTED

    def _act_verdict(self, st: DebateState, action: Action) -> Feedback:
        options = list(self.config.sides)
        probs = normalize_probs(action.probs, options)
        if probs is None and action.probs is None and action.text:
            probs = parse_choice(action.text, options)
        if probs is None:
            error = (f"expected probabilities over {options}, got {action.probs}" if action.probs
                     else f"no verdict could be read; answer like '{options[0]} | 70%'")
            return self._reject(st, JUDGE, action.text or "", error, "verdict_correction")
        st.verdict = probs
        st.verdict_meta = dict(action.meta)
        content = " | ".join(f"{o}: {p:.3f}" for o, p in probs.items())
        self._event(st, JUDGE, "verdict", content, round=st.current.round if st.current else None,
                    probs=probs, text=action.text)
        self._advance(st, JUDGE)
        return ACCEPTED

    # -- results ----------------------------------------------------------------------------
    def is_over(self, state: DebateState) -> bool:
        return state.over

    def outcome(self, state: DebateState) -> Outcome:
        metrics = episode_metrics(self.config, state)
        if state.abort is not None or state.verdict is None:
            reason = state.abort or "the episode ended without a verdict"
            return new(Outcome, status="aborted", reason=reason, metrics=metrics)
        rewards = {p: metrics["probs"][s] for p, s in metrics["player_side"].items()}
        rewards[JUDGE] = metrics["p_correct"]
        return new(Outcome, rewards=rewards, winner=metrics["winner"], metrics=metrics)

    def events(self, state: DebateState) -> list[Event]:
        return list(state.events)

    def fork(self, state: DebateState) -> DebateState:
        """Shallow copy: events are never mutated, only appended, so lists are copied, not items."""
        from dataclasses import replace

        return replace(state, acted=list(state.acted), events=list(state.events), invalid=dict(state.invalid),
                       player_answer=dict(state.player_answer), side_answer=dict(state.side_answer),
                       verdict=None if state.verdict is None else dict(state.verdict),
                       verdict_meta=dict(state.verdict_meta), cache=dict(state.cache))

    def evaluation(self, state: DebateState, evaluator: str) -> tuple[list[Message], ActionSpec] | None:
        """The judge's verdict prompt as if the debate ended now (for best-of-N scoring)."""
        if evaluator != JUDGE or not state.side_answer:
            return None
        final = views.render(self.config, state, JUDGE, "verdict", round=self._round(state))
        msgs = views.build_messages(self.config, state, JUDGE, final=final, hide_current=False)
        # options named after the player standing for each side, so best-of-N can read
        # `probs[player]` (only differs in consultancy, where the sides are answer labels)
        by_side = {s: p for p, a in state.player_answer.items() for s, b in state.side_answer.items() if a == b}
        options = [by_side.get(s, s) for s in self.config.sides]
        return msgs, self._verdict_spec(state, options)

    @staticmethod
    def _round(st: DebateState) -> int:
        return max([e.round or 0 for e in st.events if e.tag == "speech"], default=0)

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[DebateInstance]:
        """Questions from `sparring.games.debate.datasets` (quality, nyu_human_debates, custom,
        generated, ...): `dataset.split/limit/seed` override the same keys of `args`."""
        from sparring.games.debate.datasets import load_dataset

        return list(load_dataset(dataset.name, dataset.args, split=dataset.split, limit=dataset.limit,
                                 seed=dataset.seed, base_dir=base_dir))

    def instance_summary(self, instance: DebateInstance) -> dict[str, Any]:
        hit = self._summaries.get(instance.id)
        if hit is not None and hit["question"] == instance.question:
            return hit
        if len(self._summaries) > 16384:
            self._summaries.clear()
        self._summaries[instance.id] = summary = self._summary(instance)
        return summary

    def _summary(self, instance: DebateInstance) -> dict[str, Any]:
        return {"id": instance.id, "title": instance.title, "question": instance.question,
                "answers": list(instance.answers), "correct": instance.correct,
                "background_words": len(_WORDS.findall(instance.background)),
                "metadata": instance.metadata}

    def record_state(self, state: DebateState) -> dict[str, Any]:
        return {"format": self.config.format, "flip": state.flip, "variant": state.variant,
                "player_answer": dict(state.player_answer), "side_answer": dict(state.side_answer),
                "correct": state.instance.correct, "judge_display": state.judge_display,
                "debater_display": state.debater_display, "background": state.background_info,
                "consultant_correct": state.consultant_correct, "chosen": state.chosen,
                "invalid_actions": dict(state.invalid), "abort": state.abort}
