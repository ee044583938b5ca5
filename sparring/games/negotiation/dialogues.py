"""Loader for the human Deal or No Deal dialogues (Lewis et al. 2017) -> replayable transcripts.

Two upstream formats, detected per line:
- raw `data.txt`:  `c v c v c v YOU: ... <eos> THEM: ... <eos> YOU: <selection> item0=1 item1=0
  item2=1 <eos> reward=6 agree c v c v c v` — the selection is the writer's OWN items (or
  `no agreement` / `disconnect`); `agree` / `disagree` says whether the two selections matched.
- tagged `train/val/test.txt`: `<input> c v ... </input> <dialogue> ... </dialogue> <output>
  item0=.. x3 (own) item0=.. x3 (partner) | <disagree> x6 | <no_agreement> x6 | <disconnect> x6
  </output> <partner_input> c v ... </partner_input>`.

Each dialogue appears twice upstream, once from each player's side (YOU/THEM swapped). Sides are
merged into one transcript per game by a key that is the same from both sides: (context of the
first speaker, context of the second, the utterances in order). The merged transcript gets both
players' selections (data.txt lines only carry the writer's own), deduplicated.

Transcripts follow the game's conventions: Player_1 is the first speaker (instance.first_mover =
0), messages and the two final selections become "turn" events in the game's action format
(selections as proposals, the player who pressed <selection> first proposing first), so the
replay backend can play them back through the game and exporters can build SFT data from them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from sparring.errors import ConfigError
from sparring.games.negotiation.instance import DondInstance, Triple, context_string
from sparring.games.negotiation.loaders import (
    SourceArgs,
    Split,
    check_pair,
    parse_context,
    read_lines,
    select,
)
from sparring.games.negotiation.objectives import points
from sparring.games.negotiation.protocol import ActionFormat, ParsedAction, format_action
from sparring.types import Strict

Status = Literal["agree", "disagree", "no_agreement", "disconnect"]
PLAYERS = ("Player_1", "Player_2")


@dataclass
class Side:
    """One line: the dialogue seen by its writer (YOU)."""

    line: int
    you: tuple[Triple, Triple]     # (counts, values)
    them: tuple[Triple, Triple]
    speakers: list[bool]           # per utterance: written by YOU?
    texts: list[str]
    selector_is_you: bool          # who pressed <selection> first
    own: Triple | None             # YOU's selected items
    partner: Triple | None         # THEM's selected items (tagged format only)
    status: Status
    reward: int | None = None      # reward= reported upstream for YOU (data.txt only)

    def key(self) -> tuple:
        first_is_you = self.speakers[0] if self.speakers else self.selector_is_you
        a, b = (self.you, self.them) if first_is_you else (self.them, self.you)
        return (a, b, tuple(self.texts))

    @property
    def you_first(self) -> bool:
        return self.speakers[0] if self.speakers else self.selector_is_you


def _items(tokens: list[str], where: str, file: str) -> Triple:
    """`item0=1 item1=0 item2=1` -> (1, 0, 1)."""
    vals = []
    for i, tok in enumerate(tokens):
        name, _, num = tok.partition("=")
        if name != f"item{i}" or not num.isdigit():
            raise ConfigError(f"{where}: expected 'item0=N item1=N item2=N', got {' '.join(tokens)!r}", file=file)
        vals.append(int(num))
    return tuple(vals)  # type: ignore[return-value]


def _utterances(text: str, where: str, file: str) -> tuple[list[bool], list[str], bool]:
    """`YOU: hi <eos> THEM: ok <eos> YOU:` (ending before <selection>) -> speakers, texts, selector."""
    parts = [p.strip() for p in text.split("<eos>")]
    speakers, texts = [], []
    for p in parts:
        who, colon, said = p.partition(":")
        if not colon or who.strip() not in ("YOU", "THEM"):
            raise ConfigError(f"{where}: utterance {p[:40]!r} does not start with 'YOU:' or 'THEM:'", file=file)
        speakers.append(who.strip() == "YOU")
        texts.append(said.strip())
    if texts[-1]:
        raise ConfigError(f"{where}: the dialogue must end with 'YOU: <selection>' or 'THEM: <selection>'", file=file)
    if any(a == b for a, b in zip(speakers, speakers[1:], strict=False)):
        raise ConfigError(f"{where}: speakers do not alternate (the <selection> turn included)", file=file)
    selector = speakers.pop()
    texts.pop()
    return speakers, texts, selector


def parse_raw_line(line: str, n: int, file: str) -> Side:
    """A data.txt line."""
    where = f"line {n}"
    tok = line.split()
    if len(tok) < 16 or tok[-7] not in ("agree", "disagree") or "<selection>" not in tok:
        raise ConfigError(f"{where}: not a Deal or No Deal data.txt line ('c v c v c v <dialogue> <selection> "
                          f"... reward=N agree|disagree c v c v c v')", file=file)
    you, them = parse_context(tok[:6], where, file), parse_context(tok[-6:], f"{where} (partner context)", file)
    body = " ".join(tok[6:-7])
    pre, _, post = body.partition("<selection>")
    speakers, texts, selector = _utterances(pre, where, file)
    choice, _, reward = post.partition("<eos>")
    choice_tok, reward = choice.split(), reward.strip()
    if not reward.startswith("reward="):
        raise ConfigError(f"{where}: expected 'reward=...' after the selection", file=file)
    own: Triple | None = None
    if choice_tok and choice_tok[0].startswith("item"):
        own = _items(choice_tok, where, file)
        status: Status = "agree" if tok[-7] == "agree" else "disagree"
    elif " ".join(choice_tok) == "no agreement":
        status = "no_agreement"
    elif " ".join(choice_tok) == "disconnect":
        status = "disconnect"
    else:
        raise ConfigError(f"{where}: unknown selection {' '.join(choice_tok)!r}", file=file)
    value = reward[len("reward="):]
    return Side(n, you, them, speakers, texts, selector, own, None, status,
                int(value) if value.isdigit() else None)


def _between(line: str, tag: str, where: str, file: str) -> str:
    start, end = f"<{tag}>", f"</{tag}>"
    i, j = line.find(start), line.find(end)
    if i < 0 or j < i:
        raise ConfigError(f"{where}: missing {start} ... {end}", file=file)
    return line[i + len(start): j].strip()


def parse_tagged_line(line: str, n: int, file: str) -> Side:
    """A train/val/test.txt line."""
    where = f"line {n}"
    you = parse_context(_between(line, "input", where, file).split(), where, file)
    them = parse_context(_between(line, "partner_input", where, file).split(), f"{where} (partner context)", file)
    dialogue = _between(line, "dialogue", where, file)
    if not dialogue.endswith("<selection>"):
        raise ConfigError(f"{where}: the dialogue must end with '<selection>'", file=file)
    speakers, texts, selector = _utterances(dialogue[: -len("<selection>")], where, file)
    out = _between(line, "output", where, file).split()
    marks = {"<disagree>": "disagree", "<no_agreement>": "no_agreement", "<disconnect>": "disconnect"}
    own = partner = None
    if len(out) == 6 and out[0] in marks and len(set(out)) == 1:
        status: Status = marks[out[0]]  # type: ignore[assignment]
    elif len(out) == 6:
        own, partner, status = _items(out[:3], where, file), _items(out[3:], where, file), "agree"
    else:
        raise ConfigError(f"{where}: <output> must hold 6 tokens (own items then partner items, or a "
                          f"<disagree>/<no_agreement>/<disconnect> mark x6), got {len(out)}", file=file)
    return Side(n, you, them, speakers, texts, selector, own, partner, status)


class TranscriptEvent(Strict):
    player: str
    tag: str
    content: str
    round: int
    meta: dict[str, Any] = Field(default_factory=dict)


class DialogueTranscript(Strict):
    """One human game, replayable through the game (complete = both proposals, a message first)."""

    instance: DondInstance
    events: list[TranscriptEvent]
    outcome: dict[str, Any]
    complete: bool
    source: dict[str, Any]

    def record(self) -> dict[str, Any]:
        """The episode-record shape the replay backend and exporters read."""
        return {"instance": self.instance.model_dump(), "instance_id": self.instance.id, "game": "dond",
                "events": [e.model_dump() for e in self.events], "outcome": self.outcome,
                "complete": self.complete, "source": self.source}


def _transcript(sides: list[Side], file: str, fmt: ActionFormat, id_prefix: str) -> DialogueTranscript:
    """Merge the one or two sides of a game (Player_1 = first speaker)."""
    main = sides[0]
    counts = main.you[0]
    first = main.you if main.you_first else main.them
    second = main.them if main.you_first else main.you
    values = (first[1], second[1])
    check_pair(first[0], second[0], values, f"line {main.line}", file)
    key = main.key()
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
    instance = DondInstance(id=f"{id_prefix}-{digest}", counts=counts, values=values, first_mover=0)
    choice: dict[str, Triple | None] = {p: None for p in PLAYERS}
    reported: dict[str, int | None] = {}
    for s in sides:  # YOU of side s is Player_1 iff YOU spoke first
        you_p, them_p = (PLAYERS if s.you_first else PLAYERS[::-1])
        choice[you_p] = choice[you_p] or s.own
        choice[them_p] = choice[them_p] or s.partner
        reported[you_p] = s.reward
    status = main.status
    if status == "agree":  # matching selections: a missing side is the complement
        for p, q in (PLAYERS, PLAYERS[::-1]):
            if choice[p] is None and choice[q] is not None:
                choice[p] = tuple(c - x for c, x in zip(counts, choice[q], strict=False))  # type: ignore[union-attr,assignment,arg-type]
    n = len(main.texts)
    speaker = [PLAYERS[k % 2] for k in range(n + 2)]  # strict alternation from Player_1
    events = [TranscriptEvent(player=speaker[k], tag="turn", round=k,
                              content=format_action(ParsedAction("message", text=t), fmt),
                              meta={"kind": "message", "text": t}) for k, t in enumerate(main.texts)]
    selector = speaker[n]
    order = [selector, PLAYERS[1] if selector == PLAYERS[0] else PLAYERS[0]]
    for k, p in enumerate(order):
        c = choice[p]
        if c is None:
            break
        events.append(TranscriptEvent(player=p, tag="turn", round=n + k, meta={"kind": "proposal", "counts": list(c)},
                                      content=format_action(ParsedAction("proposal", counts=c), fmt)))
    a, b = choice[PLAYERS[0]], choice[PLAYERS[1]]
    deal = a is not None and b is not None and all(x + y == c for x, y, c in zip(a, b, counts, strict=False))
    raw = {p: (points(v, choice[p]) if deal else 0) for p, v in zip(PLAYERS, values, strict=False)}  # type: ignore[arg-type]
    outcome = {"status": status, "deal": deal, "points": raw, "first_mover": PLAYERS[0],
               "proposals": {p: list(c) if c else None for p, c in choice.items()},
               "reported_reward": reported, "turns": n + sum(c is not None for c in choice.values())}
    complete = n > 0 and a is not None and b is not None
    return DialogueTranscript(instance=instance, events=events, outcome=outcome, complete=complete,
                              source={"file": file, "lines": [s.line for s in sides],
                                      "contexts": [context_string(*first), context_string(*second)]})


def load_dond_dialogues(path: str | Path, *, split: Split | None = None, limit: int | None = None,
                        shuffle: bool = False, seed: int = 0, action_format: ActionFormat = "text",
                        only_complete: bool = False, fractions: dict[str, float] | None = None,
                        id_prefix: str = "dond-human") -> list[DialogueTranscript]:
    """Transcripts of a data.txt or train/val/test.txt file, one per game, in file order.

    Sides are paired by game key (first speaker's context, second's, utterances): a side whose
    mirror appears later in the file is merged with it; unpaired sides become one-sided
    transcripts. `only_complete` keeps games with both selections known (replayable to the end).
    Splits are by unordered scenario, like every other source.
    """
    file = str(Path(path).expanduser())
    games: dict[tuple, list[list[Side]]] = {}
    order: list[tuple[tuple, int]] = []
    for n, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        side = (parse_tagged_line if line.lstrip().startswith("<input>") else parse_raw_line)(line, n, file)
        slots = games.setdefault(side.key(), [])
        # pair with an open game of this key seen from the other side, else open a new one
        for slot in slots:
            if len(slot) == 1 and slot[0].you_first != side.you_first:
                slot.append(side)
                break
        else:
            slots.append([side])
            order.append((side.key(), len(slots) - 1))
    out = []
    seen_ids: dict[str, int] = {}
    for key, i in order:
        t = _transcript(games[key][i], file, action_format, id_prefix)
        k = seen_ids[t.instance.id] = seen_ids.get(t.instance.id, 0) + 1
        if k > 1:  # the same dialogue played twice on one scenario: keep ids unique
            t.instance = t.instance.model_copy(update={"id": f"{t.instance.id}-{k}"})
        if t.complete or not only_complete:
            out.append(t)
    by_id = {t.instance.id: t for t in out}
    return [by_id[x.id] for x in select([t.instance for t in out], split, limit, shuffle, seed, fractions)]


class DialogueArgs(SourceArgs):
    """Arguments of the `dond_dialogues` instance source (scenarios of human games)."""

    path: str | None = Field(None, description="an upstream data.txt or train/val/test.txt file (default: data.txt "
                                               "from $SPARRING_DATA_DIR or `sparring data fetch dond-dialogues`)")
    only_complete: bool = False
    id_prefix: str = "dond-human"
