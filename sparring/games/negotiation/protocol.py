"""Parsing and formatting of negotiation actions (plain-text lm-selfplay protocol, or JSON).

Text:  `[message] Your message here.`  and  `[propose] (x books, y hats, z balls)` (own counts).
JSON:  `{"type": "message", "text": "..."}`  and  `{"type": "propose", "books": x, "hats": y, "balls": z}`.

Parsing is tolerant where intent is unambiguous (case, whitespace, singular/plural, number words,
`books: 2`, a trailing `[END]`, a code fence around JSON) and strict where guessing would change
the deal (item order, three counts, anything written after a proposal's counts). Errors carry a
code so the game can pick the correction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from sparring.games.negotiation.instance import ITEMS, PLURALS, Triple

# tools: the moves are tool calls (`hooks.TOOLS`), each played as its text form, so it parses as text
ActionFormat = Literal["text", "json", "tools"]
ErrorCode = Literal["format", "empty_message", "item_order", "numbers", "range",
                    "message_after_proposal", "early_proposal"]


@dataclass(frozen=True)
class ParsedAction:
    kind: Literal["message", "proposal"]
    text: str = ""
    counts: Triple | None = None


class ActionError(ValueError):
    """An output that is not a valid action; `code` selects the correction template."""

    def __init__(self, code: ErrorCode, detail: str):
        super().__init__(detail)
        self.code, self.detail = code, detail


_TAG = re.compile(r"\[\s*(message|msg|propose|proposal)\s*\]\s*:?", re.IGNORECASE)
_END = re.compile(r"\[\s*end\s*\]", re.IGNORECASE)
_WORDS = {"zero": 0, "no": 0, "none": 0, "a": 1, "an": 1, "one": 1, "single": 1, "two": 2, "three": 3,
          "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_DIGITS = r"-?\d+(?:\.\d+)?"
_NUMWORD = "|".join(sorted(_WORDS, key=len, reverse=True))
_ITEM = r"(?:basket)?balls?|books?|hats?"
# "2 books", "1x ball", "two hats"  |  "books: 2", "hats=1"
_MENTION = re.compile(
    rf"(?<![\w.])(?:(?P<n1>{_DIGITS})\s*(?:x\s*)?|(?P<w1>{_NUMWORD})\s+)(?P<i1>{_ITEM})\b"
    rf"|\b(?P<i2>{_ITEM})\s*[:=]\s*(?P<n2>{_DIGITS}|{_NUMWORD})\b",
    re.IGNORECASE)
_BARE_NUM = re.compile(r"-?\d+(?:\.\d+)?")
_LEAD = re.compile(r"[\s*_`>\"'-]*(?:(?:player[ _]?\d|me|assistant|agent \w+)\s*:)?[\s*_`\"']*", re.IGNORECASE)
_SPEAKER = re.compile(r"\n\s*(?:player[ _]?\d|them|you|me|other player|assistant|user|agent \w+)\s*:",
                      re.IGNORECASE)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_PAREN = re.compile(r"\(([^()]*)\)")
# The canonical `x books, y hats, z balls` (what the prompts ask for and most replies are): the
# general mention scan below reads it the same way, at several times the cost.
_CANONICAL = re.compile(r"\s*(\d+) books?,\s*(\d+) hats?,\s*(\d+) balls?\s*", re.IGNORECASE)


def _item_index(word: str) -> int:
    w = word.lower()
    return 0 if w.startswith("book") else 1 if w.startswith("hat") else 2


def _number(tok: str) -> int:
    t = tok.lower()
    if t in _WORDS:
        return _WORDS[t]
    if "." in t:
        raise ActionError("numbers", f"counts must be whole numbers, got {tok!r}")
    return int(t)


def mentions(text: str) -> list[tuple[int, int]]:
    """(item index, number) for every "2 books" / "one hat" / "balls: 3" in free text (analysis)."""
    out = []
    for m in _MENTION.finditer(text):
        try:
            n = _number(m.group("n1") or m.group("w1") or m.group("n2"))
        except ActionError:
            continue
        out.append((_item_index(m.group("i1") or m.group("i2")), n))
    return out


def parse_counts(body: str) -> Triple:
    """Counts in a proposal body: `(1 books, 2 hats, 0 balls)`, `1 book 2 hats 0 balls`, `(1, 2, 0)`.

    Each parenthesised group is tried first, then the first line: an unambiguous proposal with a
    remark in brackets (`1 books, 1 hats, 1 balls (final offer)`) is read, not refused."""
    first_line = body.strip().splitlines()[0] if body.strip() else ""
    candidates = [g.group(1) for g in _PAREN.finditer(body)] + [first_line]
    errors: list[ActionError] = []
    for text in candidates:
        canonical = _CANONICAL.fullmatch(text)
        if canonical:
            return int(canonical[1]), int(canonical[2]), int(canonical[3])
        try:
            return scan_counts(text)
        except ActionError as e:
            errors.append(e)
    raise errors[-1]  # the reading of the whole first line says best what is wrong


def scan_counts(text: str) -> Triple:
    """The general reading of a proposal's counts: item mentions in any spelling, else three bare
    numbers. (`parse_counts` reads the canonical form without it, with the same result.)"""
    mentions = [(m.group("n1") or m.group("w1") or m.group("n2"), m.group("i1") or m.group("i2"))
                for m in _MENTION.finditer(text)]
    if mentions:
        order = [_item_index(item) for _, item in mentions]
        if len(mentions) != 3 or sorted(order) != [0, 1, 2]:
            named = ", ".join(f"{n} {i}" for n, i in mentions)
            raise ActionError("numbers", f"a proposal needs exactly one count for each of books, hats and "
                                         f"balls; found: {named}")
        if order != [0, 1, 2]:
            named = ", ".join(PLURALS[i] for i in order)
            raise ActionError("item_order", f"items must be listed as books, hats, balls; got {named}")
        return tuple(_number(n) for n, _ in mentions)  # type: ignore[return-value]
    nums = _BARE_NUM.findall(text)
    if len(nums) != 3:
        raise ActionError("numbers", f"a proposal needs three counts (books, hats, balls); found {len(nums)}"
                                     f" number(s) in {text.strip()[:60]!r}")
    return tuple(_number(n) for n in nums)  # type: ignore[return-value]


def has_tag(output: str) -> bool:
    """Whether the output opens with an action tag (an untagged reply can be read as a message)."""
    lead = _LEAD.match(output)
    return _TAG.match(output, lead.end() if lead else 0) is not None


def parse_text(output: str) -> ParsedAction:
    """The `[message]` / `[propose]` action the output starts with. A message ends where a further
    tag or a speaker label starts; a proposal is its counts and nothing more (`_proposal_body`).

    The tag must open the reply (after whitespace, quotes, markdown marks or a speaker label such as
    "Player 1:"), as in lm-selfplay: a tag buried in prose ("Once you have written [message] ...")
    is usually an echo of the instructions, not an action.
    """
    lead = _LEAD.match(output)
    m = _TAG.match(output, lead.end() if lead else 0)
    if m is None:
        raise ActionError("format", "start your reply with [message] or [propose]")
    rest = output[m.end():]
    while (again := _TAG.match(rest.lstrip())) and again.group(1).lower() == m.group(1).lower():
        rest = rest.lstrip()[again.end():]  # a repeated opening tag ("[message] [message] hi")
    kind = m.group(1).lower()
    if kind not in ("message", "msg"):
        return ParsedAction("proposal", counts=parse_counts(_proposal_body(rest)))
    nxt = _TAG.search(rest)
    body = rest[: nxt.start()] if nxt else rest
    end = _END.search(body)
    body = body[: end.start()] if end else body
    speaker = _SPEAKER.search(body)  # a model writing the other side of the dialogue too
    body = body[: speaker.start()] if speaker else body
    text = body.strip().strip('"').strip()
    if not text:
        raise ActionError("empty_message", "the message is empty")
    return ParsedAction("message", text=text)


_CLOSE = re.compile(r"[\s.!*_`]*")  # a full stop, "!", markdown marks


def _proposal_body(rest: str) -> str:
    """The counts of a proposal, which must be all there is: `(x books, y hats, z balls)` (or the
    counts alone on one line, without brackets), then at most a full stop or `!` and `[END]`. A
    remark, a second line or a further action after the counts makes the reply invalid: a
    proposal binds, and prose after it ("...balls).\nDamn it, I meant...") can contradict it, so
    it is not guessed at. Models and humans (the web app's play panel) go through this check."""
    end = _END.search(rest)
    whole = (rest[: end.start()] if end else rest).strip().lstrip("*_`:").strip()
    paren = _PAREN.match(whole)
    if paren:
        body, tail = paren.group(0), whole[paren.end():]
    else:  # the counts alone on the first line (an unclosed "(", e.g. a prefill the model left open)
        body, _, tail = whole.partition("\n")
        body = body.removeprefix("(")
        if "(" in body:  # a bracketed remark after unbracketed counts
            body, tail = body[: body.index("(")], body[body.index("("):] + "\n" + tail
    if not _CLOSE.fullmatch(tail):
        raise ActionError("format", "a proposal is only [propose] (x books, y hats, z balls) with nothing "
                                    f"after it; found {tail.strip()[:60]!r} after the counts")
    return body


def _json_object(output: str) -> dict:
    fenced = _FENCE.search(output)
    text = fenced.group(1) if fenced else output
    start = text.find("{")
    if start < 0:
        raise ActionError("format", "reply with one JSON object like {\"type\": \"message\", \"text\": \"...\"}")
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as e:
        raise ActionError("format", f"invalid JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ActionError("format", "the reply must be a JSON object")
    return obj


def _json_count(obj: dict, plural: str, singular: str) -> int:
    value = obj.get(plural, obj.get(singular))
    if value is None:
        raise ActionError("numbers", f"the proposal is missing {plural!r} (needs books, hats and balls)")
    if isinstance(value, bool):
        raise ActionError("numbers", f"{plural!r} must be a whole number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ActionError("numbers", f"{plural!r} must be a whole number, got {value!r}")
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, int):
        return value
    raise ActionError("numbers", f"{plural!r} must be a whole number, got {value!r}")


def parse_json(output: str) -> ParsedAction:
    obj = _json_object(output)
    kind = str(obj.get("type", obj.get("action", ""))).strip().lower()
    if kind in ("message", "msg"):
        text = obj.get("text", obj.get("message"))
        if not isinstance(text, str) or not text.strip():
            raise ActionError("empty_message", "a message needs a non-empty \"text\"")
        return ParsedAction("message", text=text.strip())
    if kind in ("propose", "proposal"):
        counts = tuple(_json_count(obj, p, s) for s, p in zip(ITEMS, PLURALS, strict=False))
        return ParsedAction("proposal", counts=counts)  # type: ignore[arg-type]
    raise ActionError("format", f"\"type\" must be \"message\" or \"propose\", got {obj.get('type')!r}")


def parse_action(output: str, fmt: ActionFormat = "text") -> ParsedAction:
    """Parse one model output; raises ActionError with a code on anything invalid."""
    return parse_json(output) if fmt == "json" else parse_text(output)


def check_range(proposal: Triple, counts: Triple) -> None:
    """Own counts must be 0..available for each type."""
    bad = [f"{n} {PLURALS[i]} (there are {counts[i]})" for i, n in enumerate(proposal) if not 0 <= n <= counts[i]]
    if bad:
        raise ActionError("range", "counts out of range: " + ", ".join(bad))


def format_proposal(counts: Triple) -> str:
    """`(x books, y hats, z balls)` — always plural, exactly as lm-selfplay writes it."""
    return "(" + ", ".join(f"{n} {p}" for n, p in zip(counts, PLURALS, strict=False)) + ")"


def format_action(action: ParsedAction, fmt: ActionFormat = "text") -> str:
    """Canonical output for an action: what histories show and what transcripts store."""
    if fmt == "json":
        if action.kind == "message":
            return json.dumps({"type": "message", "text": action.text})
        b, h, z = action.counts or (0, 0, 0)
        return json.dumps({"type": "propose", "books": b, "hats": h, "balls": z})
    if action.kind == "message":
        return f"[message] {action.text}"
    return f"[propose] {format_proposal(action.counts or (0, 0, 0))}"


def format_call(counts: Triple) -> str:
    """A proposal as the `propose` tool call that makes it: `propose(books=1, hats=0, balls=2)`."""
    return "propose(" + ", ".join(f"{p}={n}" for n, p in zip(counts, PLURALS, strict=False)) + ")"


def spoken_proposal(counts: Triple) -> str:
    """`1 book, 2 hats and 0 balls`: a proposal in words, so a model that copies the last
    parenthesised counts it saw copies the complement it is offered, not this."""
    parts = [f"{n} {item if n == 1 else plural}" for n, item, plural in zip(counts, ITEMS, PLURALS, strict=True)]
    return f"{parts[0]}, {parts[1]} and {parts[2]}"


def example_proposal(counts: Triple) -> Triple:
    """A legal example proposal for this pool (matches the example exchange: a book and the hats)."""
    return (min(1, counts[0]), counts[1], 0)
