"""An episode sparring played, written the way clembench's own game master would have logged it
(`interactions.json`): players as `{game_role, model_name}`, rounds as clembench counts them,
each player's messages as one growing history, the game master's closing note, and the keys
clembench's scorers read.

Rounds: taboo's is one clue and one guess, wordle's one scored guess (with any re-prompts inside
it), wordle_withcritic's a proposal, the critic's verdict and the final guess. A player keeps one
growing history in clembench (its rejected replies and the corrections stay in it); sparring shows
a player who retries only its last rejected reply and correction, so where a call does not extend
the history, the history keeps what it had and gets only the call's new prompts. A call that
cannot be read as a continuation of its player's history (other replies than the player gave) is
refused with its episode and turn.
"""

from __future__ import annotations

from typing import Any

from sparring.errors import SparringError
from sparring.records.clembench.reader import GM, MAPPED, PROGRAMMATIC, ROLES
from sparring.records.record import CallRecord, EpisodeRecord
from sparring.types import Message

# sparring game -> (seat that closes a round, its accepted replies per round)
ROUND_CLOSER = {"taboo": ("Guesser", 1), "wordle": ("Guesser", 1), "wordle_withcritic": ("Guesser", 2)}
COLOURS = {"G": "green", "Y": "yellow", "-": "red"}  # sparring's pattern letters -> clembench's words


def player_names(game: str, seats: list[str]) -> dict[str, str]:
    """sparring seat -> clembench player name ("Player 1", ...) of a played game."""
    mapped = {s: p for g, m in MAPPED.values() if g == game for p, s in m.items()}
    return {seat: mapped.get(seat, f"Player {i + 1}") for i, seat in enumerate(seats)}


def reply_text(call: CallRecord) -> str:
    """The player's whole reply: a prefilled marker ("GUESS: ") is part of what it said."""
    text = (call.completions or [])[call.chosen or 0].text
    prefix = call.assistant_prefix
    if prefix and not text.strip().lower().startswith(prefix.strip().lower()):
        return prefix + text.strip()
    return text


def feedback_text(word: str, pattern: str) -> str:
    """Wordle feedback as clembench writes it: "h<red> o<yellow> u<green> ..."."""
    return " ".join(f"{c}<{COLOURS.get(p, 'red')}>" for c, p in zip(word, pattern, strict=False))


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.content.strip() == b.content.strip()


def _within(head: list[Message], history: list[Message]) -> bool:
    """Every message of `head`, in order, in `history` (which may hold more between them)."""
    i = 0
    for m in history:
        if i < len(head) and _same(head[i], m):
            i += 1
    return i == len(head)


def new_prompts(record: EpisodeRecord, call: CallRecord, history: list[Message]) -> list[Message]:
    """What the game master sends the player before this call, given the history it keeps."""
    shown = call.messages
    if len(shown) >= len(history) and all(_same(a, b) for a, b in zip(shown, history, strict=False)):
        fresh = shown[len(history):]
    else:
        last = max((i for i, m in enumerate(shown) if m.role == "assistant"), default=-1)
        if not _within(shown[: last + 1], history):
            raise SparringError(f"episode {record.id}: {call.player}'s call {call.turn} shows replies the "
                                "player did not give before; it cannot be written as clembench's growing "
                                "history")
        fresh = shown[last + 1:]
    if any(m.role == "assistant" for m in fresh):
        raise SparringError(f"episode {record.id}: {call.player} was shown a reply it did not give")
    return fresh


def _send(to: str, m: Message) -> dict[str, Any]:
    label = {"label": "system"} if m.role == "system" else {}
    return {"from": GM, "to": to, "action": {"type": "send message", "content": m.content, **label}}


def _closing(record: EpisodeRecord) -> tuple[str, str] | None:
    """The game master's last note, in clembench's wording, from the outcome's `end`."""
    metrics = record.outcome.metrics if record.outcome else {}
    end = metrics.get("end")
    if record.game == "taboo":
        if end == "aborted" and metrics.get("abort_kind") == "taboo_word":
            v = metrics.get("violation") or {}
            which = f"Target word {v.get('matched')!r}" if v.get("kind") == "target" else \
                f"Related word {v.get('matched')!r}"
            return "invalid clue", f"{which} is similar to clue word {v.get('word')!r}"
        rounds = str(record.state.get("max_rounds", "")) if isinstance(record.state, dict) else ""
        notes = {"success": ("correct guess", "end game"), "failure": ("max rounds reached", rounds),
                 "aborted": ("invalid format", "abort game")}
        return notes.get(str(end))
    notes = {"win": ("correct guess", "game_result = WIN"),
             "loss": ("max rounds played", "game_result = LOSS"),
             "aborted": ("invalid format", "game_result = ABORT")}
    return notes.get(str(end))


def wordle_keys(record: EpisodeRecord, game: str, replies: int, rejected: int) -> dict[str, Any]:
    """The interaction keys clembench's wordle game master logs for its scorer: the end, the request
    counts (every reply of a player, the rejected ones), guesses, feedback, critic judgements."""
    metrics = record.outcome.metrics if record.outcome else {}
    end = metrics.get("end")
    committed = [str(w) for w in metrics.get("guesses") or []]
    feedbacks = [feedback_text(w, p) for w, p in zip(committed, metrics.get("patterns") or [], strict=False)]
    keys: dict[str, Any] = {"Aborted": int(end == "aborted"), "Lose": int(end == "loss"),
                            "Success": int(end == "win"), "Request Count": replies,
                            "Parsed Request Count": replies - rejected, "Violated Request Count": rejected}
    if game == "wordle_withcritic":
        proposals = [str(e.meta.get("word", "")) for e in record.events
                     if e.tag == "guess" and e.player == "Guesser"]
        verdicts = ["yes" if e.meta.get("verdict") == "keep" else "no" for e in record.events
                    if e.tag == "critic"]
        keys.update({"Guesser Guesses": proposals, "Guesser Guesses Committed": committed,
                     "Critic Judgements": verdicts})
    else:
        keys["Guesser Guesses"] = committed
    keys["Guesser Feedbacks"] = feedbacks
    return keys


def played_interactions(record: EpisodeRecord, pair: str, game_id: int) -> dict[str, Any]:
    """`interactions.json` of an episode sparring played (taboo, wordle, wordle_withcritic)."""
    game = record.game
    names = player_names(game, list(record.seats))
    closer, per_round = ROUND_CLOSER.get(game, ("", 1))
    turns: list[list[dict[str, Any]]] = [[]]
    histories: dict[str, list[Message]] = {}
    replies = rejected = closed = 0
    for call in record.calls:
        if call.op != "generate" or not call.completions or call.player not in names:
            continue
        r = closed // per_round
        while len(turns) <= r:
            turns.append([])
        history = histories.setdefault(call.player, [])
        fresh = new_prompts(record, call, history)
        turns[r].extend(_send(names[call.player], m) for m in fresh)
        reply = reply_text(call)
        turns[r].append({"from": names[call.player], "to": GM, "action": {
            "type": "get message", "content": reply, "label": "rejected" if call.rejected else "response"}})
        history.extend([*fresh, Message(role="assistant", content=reply)])
        replies += 1
        rejected += int(call.rejected)
        if call.player == closer and not call.rejected:
            closed += 1
    note = _closing(record)
    if note:
        turns[-1].append({"from": GM, "to": GM, "action": {"type": note[0], "content": note[1]}})
    players: dict[str, Any] = {GM: {"game_role": "Game Master", "model_name": PROGRAMMATIC}}
    players.update({names[s]: {"game_role": ROLES.get(s, s), "model_name": record.seats[s].model}
                    for s in record.seats})
    out: dict[str, Any] = {
        "meta": {"game_name": game, "experiment_name": record.experiment, "game_id": game_id,
                 "results_folder": pair, "round_count": len(turns), "completed": record.status != "failed",
                 "sparring_episode": record.id},
        "players": players, "turns": turns,
    }
    if game in ("wordle", "wordle_withcritic"):  # taboo's logs no such keys: its scorer counts rounds
        out.update(wordle_keys(record, game, replies, rejected))
    return out
