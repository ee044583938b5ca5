"""Deal or No Deal's hooks: its clemscore quality, headline metrics, web play panel and the
replay of the human dialogues of lm-selfplay (`data.txt`) for SFT export, and its moves as tools
(say, propose)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from sparring.gameapi.hooks import (
    GameHooks,
    HumanReplay,
    Metric,
    Metrics,
    MoveTool,
    PanelContext,
    PlayPanel,
    ReplayPlan,
    ToolArg,
)
from sparring.games.negotiation import analysis as A
from sparring.games.negotiation.instance import PLURALS
from sparring.games.negotiation.state import PLAYERS


def quality(m: Metrics) -> float | None:
    """A deal scores 100 x the mean over both seats of own points / the most that seat could get
    (its total value of the pool, 10 in the upstream distribution); no deal (a mismatch, or no
    agreement within max_turns) scores 0. So a deal that gives both sides all they value scores
    100, and splitting everything each values at half scores 50."""
    if not m.get("deal"):
        return 0.0
    points = m.get("points") or {}
    best = (m.get("ceilings") or {}).get("max_points") or {}
    if not points:
        return None
    shares = [float(v) / float(best.get(p) or 10) for p, v in points.items()]
    return 100.0 * sum(shares) / len(shares)


def _share(test: Any) -> Any:
    return lambda ms: test([dict(m) for m in ms])


METRICS = (
    Metric("agreement_rate", "higher", "wilson", "episodes ending in a deal",
           value=lambda m: float(bool(m.get("deal")))),
    Metric("abort_rate", "lower", "wilson", "episodes aborted (invalid outputs)",
           value=lambda m: float(bool(m.get("aborted")))),
    Metric("invalid_output_rate", "lower", "none", "share of all outputs that were rejected",
           aggregate=_share(lambda ms: A.error_rates(ms)["invalid_output_rate"])),
    Metric("pareto_rate", "higher", "wilson", "episodes ending on the Pareto frontier",
           aggregate=_share(A.pareto_rate)),
    Metric("welfare_optimal_rate", "higher", "wilson", "episodes reaching the maximal joint welfare",
           aggregate=_share(A.welfare_optimal_rate)),
    Metric("nash_ratio", "higher", "none", "mean X*Y relative to the best Nash product",
           aggregate=_share(A.nash_ratio)),
    Metric("dialogue_turns", "lower", "bootstrap", "accepted turns per episode",
           value=lambda m: float(m.get("turns", 0))),
)


def private_values(ctx: PanelContext) -> list[dict[str, Any]]:
    """The person's own private values (never the other player's)."""
    index = PLAYERS.index(ctx.player)
    own = index if not ctx.flip else 1 - index
    counts, values = ctx.instance.counts, ctx.instance.values[own]
    return [{"item": PLURALS[i], "count": counts[i], "value": values[i], "total": counts[i] * values[i]}
            for i in range(3)]


def parse_move(fields: dict[str, str], ctx: PanelContext) -> str:
    """A move from the form: a message, or a proposal of the counts the person keeps."""
    from sparring.games.negotiation.protocol import ParsedAction, format_action

    fmt: Literal["text", "json"] = "json" if getattr(ctx.game_config, "action_format", "text") == "json" else "text"
    kind = fields.get("kind", "")
    if kind == "message":
        text = (fields.get("text") or "").strip()
        if not text:
            raise ValueError("please write something before sending")
        if len(text) > 20_000:
            raise ValueError(f"the message is too long ({len(text)} characters; at most 20000)")
        return format_action(ParsedAction("message", text=text), fmt)
    if kind != "propose":
        raise ValueError("choose whether to send a message or a proposal")
    counts = []
    for item, total in zip(PLURALS, ctx.instance.counts, strict=True):
        raw = (fields.get(item) or "").strip()
        if not (raw.isascii() and raw.isdigit()):
            raise ValueError(f"the number of {item} must be a whole number from 0 to {total}, got {raw!r}")
        n = int(raw)
        if n > total:
            raise ValueError(f"there are only {total} {item} in the pool; you asked for {n}")
        counts.append(n)
    return format_action(ParsedAction("proposal", counts=(counts[0], counts[1], counts[2])), fmt)


def replay_dond(path: Path, split: str, limit: int | None, rounds: int) -> ReplayPlan:
    """The human dialogues of `data.txt`, each utterance replayed in its seat."""
    from sparring.games.negotiation.dialogues import load_dond_dialogues
    from sparring.models.replay import ReplayModel

    transcripts = load_dond_dialogues(path, split=None if split == "all" else split,  # type: ignore[arg-type]
                                      limit=limit, only_complete=True)
    replay = ReplayModel.from_records([t.record() for t in transcripts], name="human")
    config: dict[str, Any] = {
        "name": "human-dond", "game": "dond",
        "dataset": {"name": "dond_dialogues", "split": split,
                    "args": {"path": str(path), "only_complete": True, **({"limit": limit} if limit else {})}},
        "agents": {"human": {"role": "negotiator", "model": "human"}},
        "tournament": {"type": "self_play", "participants": ["human"]}}
    return ReplayPlan(config=config, models={"human": replay})


def _move(action: Any, ctx: PanelContext) -> str:
    """An action in the configured format (`game_args.action_format`), as a model would write it."""
    from sparring.games.negotiation.protocol import format_action

    return format_action(action, "json" if getattr(ctx.game_config, "action_format", "text") == "json" else "text")


def _say(args: Any, ctx: PanelContext) -> str:
    from sparring.games.negotiation.protocol import ParsedAction

    return _move(ParsedAction("message", text=str(args["message"]).strip()), ctx)


def _propose(args: Any, ctx: PanelContext) -> str:
    from sparring.games.negotiation.protocol import ParsedAction

    return _move(ParsedAction("proposal", counts=(int(args["books"]), int(args["hats"]), int(args["balls"]))), ctx)


def _parsed(reply: str, ctx: PanelContext, kind: str) -> Any:
    """The reply's action when it parses as a `kind` move, else None."""
    from sparring.games.negotiation.protocol import ActionError, parse_action

    try:
        action = parse_action(reply, "json" if getattr(ctx.game_config, "action_format", "text") == "json" else "text")
    except ActionError:
        return None
    return action if action.kind == kind else None


def _say_args(reply: str, ctx: PanelContext) -> dict[str, Any] | None:
    action = _parsed(reply, ctx, "message")
    return None if action is None else {"message": action.text}


def _propose_args(reply: str, ctx: PanelContext) -> dict[str, Any] | None:
    action = _parsed(reply, ctx, "proposal")
    return None if action is None else dict(zip(("books", "hats", "balls"), action.counts, strict=True))


TOOLS = (
    MoveTool("say", "Send the other player a message (to negotiate before anyone proposes).",
             (ToolArg("message", str, "what you say to the other player"),), _say, parse=_say_args),
    MoveTool("propose", "Propose the final division: how many of each item YOU keep; the other player gets the "
                        "rest. The deal is made when both proposals are compatible.",
             (ToolArg("books", int, "books you keep"), ToolArg("hats", int, "hats you keep"),
              ToolArg("balls", int, "balls you keep")), _propose, parse=_propose_args),
)

HOOKS = GameHooks(
    quality=quality,
    metrics=METRICS,
    play=PlayPanel(roles=("negotiator",), move_tags=frozenset({"turn"}), move_form="play_move.html.jinja",
                   parse_move=parse_move, private_view=private_values),
    human_data=(HumanReplay("dond", "negotiator", replay_dond, "Deal or No Deal data.txt (lm-selfplay)"),),
    tools=TOOLS,
    tool_args={"action_format": "tools", "prefill_proposals": False},
)
