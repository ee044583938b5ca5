"""Deal or No Deal as played in lm-selfplay, with the rules enforced by the game itself.

Players alternate; each turn is a message or a proposal of the proposer's OWN counts. Proposals
are hidden: the other player only learns that one was made and must answer with a proposal of its
own. The game ends after the second proposal (deal iff they add up to the pool) or after
`max_turns` accepted turns (no deal). Invalid outputs get a correction shown only to the actor,
who retries; `max_errors` invalid outputs in a row abort the episode (both rewards 0).

Events: accepted turns have tag "turn" (the action-spec tag, so replay indices line up) with
`meta.kind` "message" | "proposal"; proposals are visible only to the proposer, the other gets a
"proposal_notice". Rejected outputs are "invalid" + "correction" events visible only to the actor
and flagged `meta.exclude_from_training`.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

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
from sparring.games.negotiation.config import DondConfig
from sparring.games.negotiation.hooks import HOOKS
from sparring.games.negotiation.instance import ITEMS, PLURALS, DondInstance, Triple, remainder
from sparring.games.negotiation.objectives import points, rewards
from sparring.games.negotiation.pareto import ceilings
from sparring.games.negotiation.partner import OFFER_LABEL, POOL_LABEL, VALUES_LABEL
from sparring.games.negotiation.protocol import (
    ActionError,
    ParsedAction,
    check_range,
    example_proposal,
    format_action,
    format_call,
    format_proposal,
    has_tag,
    parse_action,
    spoken_proposal,
)
from sparring.games.negotiation.state import PLAYERS, DondState, Turn, merge_roles
from sparring.prompts.memo import RenderMemo
from sparring.types import Message, new

TURN_TAG = "turn"
PROPOSAL_PREFIX = "[propose] ("
_CACHE_SIZE = 8192  # static views memoised per game object (cleared when full)


@register_game("dond", "deal_or_no_deal")
class DealOrNoDealGame(Game[DondInstance, DondState]):
    name: ClassVar[str] = "dond"
    Config = DondConfig
    InstanceType = DondInstance
    default_prompts: dict[str, str] = {"negotiator": "negotiation"}
    hooks = HOOKS
    config: DondConfig

    def __init__(self, config: DondConfig | None = None):
        super().__init__(config)
        self._static: dict[tuple, dict[str, Any]] = {}
        self.memo = RenderMemo()  # renders of this game's prompts, for the run that owns the game

    def players(self) -> dict[str, str]:
        return dict.fromkeys(PLAYERS, "negotiator")

    # -- setup ------------------------------------------------------------------------------
    def reset(self, instance: DondInstance, seats: dict[str, Seat], rng: random.Random,
              flip: bool = False) -> DondState:
        missing = [p for p in PLAYERS if p not in seats]
        if missing:
            raise ConfigError(f"Deal or No Deal needs seats for {', '.join(PLAYERS)}; missing {', '.join(missing)}")
        ctx = (1, 0) if flip else (0, 1)  # which context each player holds
        values = {p: instance.values[c] for p, c in zip(PLAYERS, ctx, strict=False)}
        first: str
        if self.config.first_player is not None:
            first = self.config.first_player
        elif instance.first_mover is None:
            first = PLAYERS[0] if rng.random() < 0.5 else PLAYERS[1]
        else:
            first = PLAYERS[ctx.index(instance.first_mover)]
        variant = rng.randrange(2**16) if self.config.variant == "random" else int(self.config.variant)
        state = DondState(instance=instance, prompts={p: seats[p].prompts for p in PLAYERS}, values=values,
                          first=first, flip=flip, variant=variant, to_move=first)
        for p in PLAYERS:
            state.texts[p] = self._static_texts(state, p)
            state.talk[p] = [state.texts[p]["system"], state.texts[p]["start"]]
        return state

    def _forms(self, counts: Triple) -> tuple[str, str, str]:
        """How a message / a proposal is written in the configured format, and an example."""
        fmt = self.config.action_format
        example = format_action(ParsedAction("proposal", counts=example_proposal(counts)), fmt)
        if fmt == "json":
            return ('{"type": "message", "text": "..."}',
                    '{"type": "propose", "books": x, "hats": y, "balls": z}', example)
        if fmt == "tools":
            return ("a call to say(message)", "a call to propose(books, hats, balls) with the counts you keep",
                    format_call(example_proposal(counts)))
        return "[message] followed by your message", "[propose] (x books, y hats, z balls)", example

    def _static_texts(self, state: DondState, player: str) -> dict[str, Any]:
        """Everything about `player`'s view that never changes during the episode, rendered once.

        Memoised across episodes: a view depends only on (prompt set, variant, pool, own values,
        first mover), and there are few distinct contexts, so renders mostly hit the cache.
        """
        key = (state.prompts[player], state.variant, state.instance.counts, state.values[player],
               player == state.first)
        hit = self._static.get(key)
        if hit is not None:
            return hit
        ps, v, cfg = state.prompts[player], state.variant, self.config
        counts, vals = state.instance.counts, state.values[player]
        message_form, proposal_form, example = self._forms(counts)
        items = [{"name": n, "plural": pl, "label": n if c == 1 else pl, "count": c, "value": x}
                 for n, pl, c, x in zip(ITEMS, PLURALS, counts, vals, strict=False)]
        var: dict[str, Any] = dict(items=items, counts=list(counts), values=list(vals), objective=cfg.objective,
                                   lam=cfg.weight, action_format=cfg.action_format, message_form=message_form,
                                   proposal_form=proposal_form, example=example,
                                   example_text=format_proposal(example_proposal(counts)), max_turns=cfg.max_turns,
                                   first=player == state.first, reveal=cfg.reveal_proposals,
                                   remind_pool=cfg.remind_pool, pool_counts=format_proposal(counts),
                                   pool_call=format_call(counts))
        var["pool_text"] = ps.render("pool", v, **var)
        var["values_text"] = ps.render("values", v, **var)
        system = ps.render("system", v, format_rules=ps.render(f"format_{cfg.action_format}", v, **var),
                           objective_rules=ps.render(f"objective_{cfg.objective}", v, **var), **var)
        start = ps.render("start", v, **var)
        texts = {"key": key, "vars": var, "system": new(Message, role="system", content=system),
                 "start": new(Message, role="user", content=start),
                 "scratchpad": ps.render("scratchpad", v, **var) if ps.has("scratchpad") else None}
        if len(self._static) >= _CACHE_SIZE:
            self._static.clear()
        self._static[key] = texts
        return texts

    def _render(self, state: DondState, player: str, tag: str, **extra: Any) -> str:
        """Render a per-turn template through the shared memo (`prompts.memo`): a turn prompt or
        an opponent's message is rendered once per wording, however many pools the run has."""
        return self.memo.render(state.prompts[player], tag, state.variant, {**state.texts[player]["vars"], **extra})

    # -- turn structure ---------------------------------------------------------------------
    def to_act(self, state: DondState) -> list[str]:
        return [] if state.over else [state.to_move]

    def is_over(self, state: DondState) -> bool:
        return state.over

    def _must_propose(self, state: DondState, player: str) -> bool:
        return bool(state.proposals) and player not in state.proposals

    def _prefilled(self, state: DondState, player: str) -> bool:
        """Whether this reply starts as a proposal (`prefill_proposals`)."""
        if not self.config.prefill_proposals or state.n_messages == 0:
            return False
        after = self.config.propose_after
        return self._must_propose(state, player) or (after is not None and len(state.turns) >= after)

    def action_spec(self, state: DondState, player: str) -> ActionSpec:
        texts = state.texts[player]
        if self._prefilled(state, player):
            prefilled = texts.get("prefilled_spec")
            if prefilled is None:
                prefilled = texts["prefilled_spec"] = ActionSpec(
                    kind="text", tag=TURN_TAG, assistant_prefix=PROPOSAL_PREFIX,
                    scratchpad_instruction=texts["scratchpad"])
            return prefilled
        spec = texts.get("spec")
        if spec is None:  # one frozen spec per static view, shared by every turn and episode
            spec = texts["spec"] = ActionSpec(kind="text", tag=TURN_TAG, scratchpad_instruction=texts["scratchpad"])
        return spec

    def _turn_prompt(self, state: DondState, player: str) -> str | None:
        """The turn instruction `player` is shown now (none when it must answer a proposal)."""
        if state.over or state.to_move != player or self._must_propose(state, player):
            return None
        return self._render(state, player, "turn", turns_left=self.config.max_turns - len(state.turns),
                            can_propose=state.n_messages > 0)

    def observation(self, state: DondState, player: str) -> list[Message]:
        texts = state.texts[player]
        msgs: list[Message | tuple[str, str]] = [texts["system"], texts["start"]]
        for t in state.turns:
            view = t.views.get(player)
            if view is not None:
                msgs.append(view)
        if (turn := self._turn_prompt(state, player)) is not None:
            msgs.append(("user", turn))
        bad = state.pending.get(player)
        if bad is not None:
            msgs += [("assistant", bad[0]), ("user", bad[1])]
        return merge_roles(msgs)

    def conversation(self, state: DondState, player: str) -> list[Message]:
        """The game as a chat that only grows: what the player was shown and wrote, in order — each
        turn instruction stays where it was shown, its own replies as it wrote them (a prefilled
        proposal with its prefix), a rejected reply with its correction — and the turn instruction
        it is shown now. Consecutive user messages are joined as in the rendered view; the player
        always replies after them, so a joined message never changes once shown."""
        msgs: list[Message | tuple[str, str]] = list(state.talk[player])
        if player not in state.pending and (turn := self._turn_prompt(state, player)) is not None:
            msgs.append(("user", turn))
        return merge_roles(msgs)

    def request_labels(self, state: DondState, player: str) -> dict[str, Any]:
        """`player`'s values, the pool and the other player's proposal (if any), for the scripted
        partner (`partner.py`)."""
        offer = state.proposals.get(state.other(player))
        return {VALUES_LABEL: list(state.values[player]), POOL_LABEL: list(state.instance.counts),
                **({OFFER_LABEL: list(offer)} if offer is not None else {})}

    # -- acting -----------------------------------------------------------------------------
    def act(self, state: DondState, player: str, action: Action) -> Feedback:
        if state.over:
            return Feedback(accepted=False, abort="the game is already over")
        if player != state.to_move:
            raise ValueError(f"{player} acted out of turn (to move: {state.to_move})")
        raw = (action.text or "").strip()
        prefilled = self._prefilled(state, player)
        # the conversation view: the turn instruction it was shown, then its reply as it wrote it
        turn = None if player in state.pending else self._turn_prompt(state, player)  # a retry answers the correction
        state.talk[player] += [*([new(Message, role="user", content=turn)] if turn is not None else []),
                               new(Message, role="assistant",
                                   content=(PROPOSAL_PREFIX if prefilled else "") + (action.text or ""))]
        if prefilled and not raw.lstrip().startswith("["):
            raw = PROPOSAL_PREFIX + raw  # the reply continued the prefilled "[propose] ("
        try:
            try:
                parsed = parse_action(raw, self.config.action_format)
            except ActionError as err:
                if not (err.code == "format" and self.config.untagged_as_message
                        and self.config.action_format == "text" and raw and not has_tag(raw)):
                    raise
                parsed = ParsedAction("message", text=raw)
            if parsed.kind == "message" and self._must_propose(state, player):
                raise ActionError("message_after_proposal", "the other player already proposed")
            if parsed.kind == "proposal":
                if state.n_messages == 0:
                    raise ActionError("early_proposal", "no message has been sent yet")
                check_range(parsed.counts, state.instance.counts)  # type: ignore[arg-type]
        except ActionError as err:
            return self._reject(state, player, raw, err)
        self._accept(state, player, parsed)
        return ACCEPTED

    def _event(self, state: DondState, player: str, tag: str, content: str, visible_to: list[str] | None,
               **meta: Any) -> None:
        state.events.append(new(Event, index=len(state.events), player=player, tag=tag, content=content,
                                                  visible_to=visible_to, round=len(state.turns), meta=meta))

    def _reject(self, state: DondState, player: str, raw: str, err: ActionError) -> Feedback:
        state.errors_in_row += 1
        state.n_invalid[player] += 1
        correction = self._render(state, player, f"correction_{err.code}", detail=err.detail,
                                  must_propose=self._must_propose(state, player))
        meta = {"error": err.code, "detail": err.detail, "attempt": state.errors_in_row,
                "exclude_from_training": True}
        self._event(state, player, "invalid", raw, [player], **meta)
        self._event(state, player, "correction", correction, [player], **meta)
        state.talk[player].append(new(Message, role="user", content=correction))
        if state.errors_in_row >= self.config.max_errors:
            reason = f"{player} produced {state.errors_in_row} invalid outputs in a row (last: {err.detail})"
            state.over, state.end, state.abort_reason = True, "aborted", reason
            state.pending.pop(player, None)
            self._event(state, player, "abort", reason, None)
            return Feedback(accepted=False, correction=correction, abort=reason)
        state.pending[player] = (raw, correction)
        return Feedback(accepted=False, correction=correction)

    def _accept(self, state: DondState, player: str, parsed: ParsedAction) -> None:
        other = state.other(player)
        state.errors_in_row = 0
        state.pending.pop(player, None)
        shown = format_action(parsed, self.config.action_format)
        views = {player: new(Message, role="assistant", content=shown)}
        if parsed.kind == "message":
            state.n_messages += 1
            seen = self._render(state, other, "opponent_message", text=parsed.text, action=shown)
            views[other] = new(Message, role="user", content=seen)
            self._event(state, player, TURN_TAG, shown, None, kind="message", text=parsed.text)
        else:
            counts = parsed.counts
            assert counts is not None
            first_proposal = not state.proposals
            state.proposals[player] = counts
            self._event(state, player, TURN_TAG, shown, [player], kind="proposal", counts=list(counts))
            if first_proposal:
                rest = remainder(state.instance.counts, counts)
                notice = self._render(state, other, "proposal_notice", revealed=self.config.reveal_proposals,
                                      theirs=format_proposal(counts), rest=format_proposal(rest),
                                      rest_call=format_call(rest), theirs_text=spoken_proposal(counts))
                views[other] = new(Message, role="user", content=notice)
                self._event(state, player, "proposal_notice", notice, [other])
            else:
                state.over = True
                state.end = "deal" if _is_deal(state) else "mismatch"
        state.turns.append(Turn(player=player, action=parsed, views=views))
        if other in views:
            state.talk[other].append(views[other])
        if not state.over and len(state.turns) >= self.config.max_turns:
            state.over, state.end = True, "max_turns"
        state.to_move = other

    # -- results ----------------------------------------------------------------------------
    def outcome(self, state: DondState) -> Outcome:
        counts = state.instance.counts
        deal = state.end == "deal"
        raw = {p: points(state.values[p], state.proposals[p]) if deal else 0 for p in PLAYERS}
        rew = rewards(raw, self.config.weight, deal)
        ceil = ceilings(counts, state.values[PLAYERS[0]], state.values[PLAYERS[1]])
        x, y = raw[PLAYERS[0]], raw[PLAYERS[1]]
        metrics: dict[str, Any] = {
            "objective": self.config.objective, "lam": self.config.weight,
            "deal": deal, "aborted": state.end == "aborted", "end": state.end or "unfinished",
            "scored_both": deal and x > 0 and y > 0,  # a deal worth 0 to a side = walking away for it
            "points": raw, "rewards": rew,
            "first_mover": state.first, "second_mover": state.other(state.first), "flip": state.flip,
            "turns": len(state.turns), "n_messages": state.n_messages,
            "n_invalid": dict(state.n_invalid), "n_invalid_total": sum(state.n_invalid.values()),
            "proposals": {p: list(state.proposals[p]) if p in state.proposals else None for p in PLAYERS},
            "proposal_order": list(state.proposals),
            "counts": list(counts), "values": {p: list(state.values[p]) for p in PLAYERS},
            "ceilings": {**ceil.to_dict(), "max_points": dict(zip(PLAYERS, ceil.max_points, strict=False))},
            "pareto_optimal": deal and ceil.is_pareto_optimal(x, y),
            "welfare_optimal": deal and ceil.is_welfare_optimal(x, y),
            "nash_ratio": ceil.nash_ratio(x, y) if deal else 0.0,
            "messages": [{"player": t.player, "text": t.action.text} for t in state.turns
                         if t.action.kind == "message"],
        }
        a, b = PLAYERS
        winner = a if rew[a] > rew[b] else b if rew[b] > rew[a] else None
        if state.end == "aborted":
            return new(Outcome, rewards=rew, winner=None, status="aborted", reason=state.abort_reason, metrics=metrics)
        reason = {"deal": "deal", "mismatch": "proposals do not add up to the pool",
                  "max_turns": f"no deal within {self.config.max_turns} turns"}.get(state.end or "", "unfinished")
        return new(Outcome, rewards=rew, winner=winner, status="complete", reason=reason, metrics=metrics)

    def events(self, state: DondState) -> list[Event]:
        return list(state.events)

    def fork(self, state: DondState) -> DondState:
        """Cheap copy (best-of-N look-ahead): events and turns are append-only, prompts shared."""
        return replace(state, turns=list(state.turns), events=list(state.events), proposals=dict(state.proposals),
                       pending=dict(state.pending), n_invalid=dict(state.n_invalid),
                       talk={p: list(t) for p, t in state.talk.items()})

    def load_instances(self, dataset: DatasetConfig, base_dir: Path) -> list[DondInstance]:
        """Scenarios from `sparring.games.negotiation.sources` (dond_generated, dond_selfplay,
        dond_dialogues); `generated` / `selfplay` / `dialogues` are accepted too."""
        from sparring.games.negotiation.sources import NEGOTIATION_SOURCES, load_instances

        name = dataset.name
        if name not in NEGOTIATION_SOURCES and f"dond_{name}" in NEGOTIATION_SOURCES:
            name = f"dond_{name}"
        return list(load_instances(name, dataset.args, split=dataset.split, limit=dataset.limit,
                                   seed=dataset.seed, base_dir=base_dir))

    def instance_summary(self, instance: DondInstance) -> dict[str, Any]:
        out: dict[str, Any] = {"id": instance.id, "counts": list(instance.counts),
                               "values": [list(v) for v in instance.values]}
        if instance.first_mover is not None:
            out["first_mover"] = instance.first_mover
        return out

    def record_state(self, state: DondState) -> dict[str, Any]:
        return {"first_mover": state.first, "flip": state.flip, "variant": state.variant,
                "values": {p: list(state.values[p]) for p in PLAYERS}, "objective": self.config.objective,
                "lam": self.config.weight, "action_format": self.config.action_format}


def _is_deal(state: DondState) -> bool:
    a, b = (state.proposals.get(p) for p in PLAYERS)
    return a is not None and b is not None and all(x + y == c for x, y, c in zip(a, b, state.instance.counts, strict=False))
