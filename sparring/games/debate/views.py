"""Who sees what, rendered through each seat's prompt set.

Every player's observation is a chat: the rules (system), then for each of its own past actions
the instruction it was given (user) and its reply (assistant), with everyone else's visible
actions folded into the user turns, and finally the current instruction. Observations therefore
extend each other turn by turn, so a player's SFT row is exactly what it saw plus its reply.
The judge's variables never include the background, so no judge template can leak the story.
"""

from __future__ import annotations

from typing import Any

from sparring.gameapi.game import Event
from sparring.games.debate.config import DebateConfig
from sparring.games.debate.schedule import JUDGE, Step
from sparring.games.debate.state import DebateState
from sparring.types import Message, new

INSTRUCTION = {"speech": "speech", "choose": "choose", "question": "judge_question",
               "reasoning": "judge_reasoning", "verdict": "verdict"}


def player_vars(cfg: DebateConfig, st: DebateState, player: str) -> dict[str, Any]:
    """Template variables for `player` (the NYU placeholders plus round-independent facts)."""
    key = ("vars", player)
    if key in st.cache:
        return st.cache[key]
    inst = st.instance
    common = {"question": inst.question, "format": cfg.format, "order": cfg.order,
              "rounds": cfg.rounds, "word_limit": cfg.speech_word_limit,
              "judge_questions": cfg.judge_questions, "judge_reasoning": cfg.judge_reasoning,
              "quote_limit": cfg.max_quote_words, "title": inst.title}
    if player == JUDGE:
        disp = st.judge_display or st.debater_display
        sides = cfg.sides
        v = {**common, "name": JUDGE, "answer_a": inst.answers[disp[0]], "answer_b": inst.answers[disp[1]],
             "answers": tuple(inst.answers[i] for i in disp), "side_a": sides[0], "side_b": sides[1],
             "debaters": tuple(cfg.debaters), "consultant_name": "Consultant", "consultant_letter": ""}
        if cfg.format == "consultancy":
            v["consultant_letter"] = st.letter_of(st.player_answer["Consultant"], disp)
    else:
        disp = st.debater_display
        others = [d for d in cfg.debaters if d != player]
        ans = st.player_answer.get(player)
        chooser = cfg.format == "open_debate" and st.steps[0].players[0] == player
        v = {**common, "name": player, "opponent_name": others[0] if others else "",
             "background": st.background, "answer_a": inst.answers[disp[0]],
             "answer_b": inst.answers[disp[1]], "answers": tuple(inst.answers[i] for i in disp),
             "chooser": chooser,
             "position": "" if ans is None else inst.answers[ans],
             "opponent_position": "" if ans is None else inst.answers[1 - ans],
             "position_letter": "" if ans is None else st.letter_of(ans, disp),
             "opponent_letter": "" if ans is None else st.letter_of(1 - ans, disp)}
    st.cache[key] = v
    return v


def render(cfg: DebateConfig, st: DebateState, player: str, tag: str, cache_key: Any = None,
           **extra: Any) -> str:
    if cache_key is not None:
        key = ("r", player, tag, cache_key)
        hit = st.cache.get(key)
        if hit is not None:
            return hit
    variables = player_vars(cfg, st, player)
    text = st.memo.render(st.seats[player].prompts, tag, st.variant, {**variables, **extra} if extra else variables)
    if cache_key is not None:
        st.cache[key] = text
    return text


def system_message(cfg: DebateConfig, st: DebateState, player: str) -> str:
    if player == JUDGE:
        return render(cfg, st, player, "judge_system", cache_key=0)
    if cfg.format == "open_debate" and st.steps[0].players[0] == player:
        # the chooser's rules never state its position, so they read the same before and after
        # the choice (observations stay prefixes of each other)
        key = ("r", player, "debater_system", 0)
        if key not in st.cache:
            v = {**player_vars(cfg, st, player), "position": "", "opponent_position": "",
                 "position_letter": "", "opponent_letter": ""}
            st.cache[key] = st.memo.render(st.seats[player].prompts, "debater_system", st.variant, v)
        return st.cache[key]
    return render(cfg, st, player, "debater_system", cache_key=0)


def instruction(cfg: DebateConfig, st: DebateState, player: str, step_index: int) -> str:
    step = st.steps[step_index]
    return render(cfg, st, player, INSTRUCTION[step.tag], cache_key=step_index, round=step.round)


def entry(cfg: DebateConfig, st: DebateState, viewer: str, ev: Event) -> str:
    """How someone else's visible action reads in `viewer`'s transcript."""
    if ev.tag == "question":
        return render(cfg, st, viewer, "judge_question_entry", cache_key=("e", ev.index),
                      text=ev.content, round=ev.round or 0)
    return render(cfg, st, viewer, "speech_entry", cache_key=("e", ev.index), speaker=ev.player,
                  text=ev.meta.get("marked", ev.content), round=ev.round or 0)


def visible(st: DebateState, ev: Event, viewer: str, hide_current: bool = True,
            cur: Step | None | bool = False) -> bool:
    """`cur`: `st.current`, when the caller already has it (it is asked once per event)."""
    if ev.visible_to is not None and viewer not in ev.visible_to:
        return False
    if ev.player == viewer:
        return True
    if ev.tag in ("verdict", "reasoning"):
        return False
    if cur is False:
        cur = st.current
    # simultaneous moves: a player does not see others' moves of the step it is taking part in
    return not (hide_current and cur is not None and len(cur.players) > 1  # type: ignore[union-attr]
                and ev.meta.get("step") == st.step and viewer in cur.players)  # type: ignore[union-attr]


def as_written(written: str | None, shown: str) -> dict[str, Any]:
    """The reply as the model wrote it, for the event's meta when the game shows it otherwise
    (trimmed, cut at the word limit): the conversation view shows the player what it wrote."""
    return {"written": written} if written is not None and written != shown else {}


def build_messages(cfg: DebateConfig, st: DebateState, player: str, *, final: str | None = None,
                   hide_current: bool = True, current: bool = True, as_written: bool = False) -> list[Message]:
    """`final` replaces the current instruction (used for the judge's what-if verdict); `as_written`
    shows the player's own replies as it wrote them (the conversation view)."""
    msgs = [new(Message, role="system", content=system_message(cfg, st, player))]
    pending: list[str] = []
    emitted: set[int] = set()

    def flush() -> None:
        if pending:
            msgs.append(new(Message, role="user", content="\n\n".join(pending)))
            pending.clear()

    cur = st.current
    evs = [e for e in st.events if visible(st, e, player, hide_current, cur)]
    # within a step: the viewer's own moves first (as it experienced them), then the others in
    # the step's seat order, so simultaneous moves read the same whoever was processed first
    def order(e: Event) -> tuple[int, bool, int, int]:
        s = e.meta.get("step", 0)
        seats = st.steps[s].players if s < len(st.steps) else ()
        return (s, e.player != player, seats.index(e.player) if e.player in seats else len(seats), e.index)

    evs.sort(key=order)
    for ev in evs:
        if ev.player != player:
            pending.append(entry(cfg, st, player, ev))
        elif ev.tag == "correction":
            pending.append(ev.content)
        else:
            s = ev.meta.get("step", 0)
            if s not in emitted:
                pending.append(instruction(cfg, st, player, s))
                emitted.add(s)
            if ev.tag == "verdict" or (ev.tag == "rejected" and not ev.content):
                continue
            flush()
            content = ev.meta.get("written", ev.content) if as_written else ev.content
            msgs.append(new(Message, role="assistant", content=content))
    if final is not None:
        pending.append(final)
    elif current and st.current is not None and player in st.current.players and st.step not in emitted:
        pending.append(instruction(cfg, st, player, st.step))
    flush()
    return msgs
