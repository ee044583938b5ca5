"""Replay backend: answers with the speeches recorded in stored transcripts.

Why: re-judging a finished tournament with a new judge (the `replicate` tournament), and
replaying human debates (NYU transcripts) against model judges, must reuse the exact recorded
speeches instead of generating new ones. The engine labels every request with `context`
(instance_id, player, role, tag, index/round, flip); this backend looks the speech up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from sparring.errors import BackendError, ConfigError
from sparring.models.base import Model, register_backend
from sparring.models.scripted import count_tokens, prompt_tokens
from sparring.types import Completion, GenerateRequest, Usage

MatchField = Literal["instance_id", "flip", "repeat", "player", "role", "tag", "index", "round"]


def _norm(value: Any) -> str:
    """Compare ids across JSON and Python (12 == "12", True == "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@register_backend("replay")
class ReplayModel(Model):
    """Offline model that returns recorded speeches; it cannot score.

    Input: `path` to a JSONL file of episode records, or a run directory holding
    `episodes.jsonl`. Each line holds `instance` ({"id": ...}) or `instance_id`, optionally `flip`,
    `repeat` and `seats` ({player: {"role": ...}}), and `events`: [{"player", "tag", "content",
    "round"?}, ...]. The key of an event is the `match` fields: record-level ones (instance_id,
    flip, repeat), event-level ones (player, tag, round, role — role falls back to the seat's
    role) and `index`, the occurrence of that (player, tag) within its episode, counted from 0.
    A request's key comes from its `context`; `index` falls back to `round` when absent.
    When two records give different speeches for one key (e.g. both seat orders of an instance
    and `flip` is not matched) the lookup fails unless `duplicates` says which one to keep.
    If a request has an `assistant_prefix` that the recorded speech starts with, the prefix is
    stripped so that prefix + completion reproduces the recording.
    """

    can_score = False

    class Args(Model.Args):
        path: str | None = Field(None, description="episodes JSONL file or run directory")
        match: list[MatchField] = Field(default_factory=lambda: ["instance_id", "player", "tag", "index"],  # type: ignore[arg-type]
                                        min_length=1)
        duplicates: Literal["error", "first", "last"] = "error"

    args: Args  # the validated `args:` of this backend's spec

    def __init__(self, name: str = "replay", *, records: Iterable[Any] | None = None, **kwargs: Any):
        super().__init__(name, **kwargs)
        self._index: dict[tuple[str, ...], list[str]] = {}
        if records is not None:
            self.source = "<in-memory records>"
            for n, rec in enumerate(records, 1):
                if hasattr(rec, "model_dump"):
                    rec = rec.model_dump()
                self._add(rec, where=f"record {n}")
        elif self.args.path is None:
            raise ConfigError("the replay backend needs 'path' (episodes.jsonl or a run directory)",
                              key="args.path")
        else:
            self.source = str(self._resolve_path(self.args.path))
            self._load(Path(self.source))

    @classmethod
    def from_records(cls, records: Iterable[Any], name: str = "replay", **args: Any) -> ReplayModel:
        """Build from in-memory episode records (dicts or pydantic records), e.g. loaded transcripts."""
        return cls(name, records=records, **args)

    # -- index -------------------------------------------------------------------------------
    @staticmethod
    def _resolve_path(path: str) -> Path:
        p = Path(path).expanduser()
        if p.is_dir():
            p = p / "episodes.jsonl"
        if not p.is_file():
            raise ConfigError(f"no episode records at {p}", key="args.path")
        return p

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise ConfigError(f"cannot read: {e.strerror}", file=str(path)) from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"line {n}: invalid JSON ({e.msg})", file=str(path)) from None
            self._add(rec, where=f"line {n}")

    def _add(self, rec: Any, where: str) -> None:
        if not isinstance(rec, dict):
            raise ConfigError(f"{where}: expected a JSON object (an episode record)", file=self.source)
        found = rec.get("instance")
        instance: dict[str, Any] = found if isinstance(found, dict) else {}
        instance_id = rec.get("instance_id", instance.get("id"))
        if instance_id is None:
            raise ConfigError(f"{where}: record has neither 'instance_id' nor 'instance.id'", file=self.source)
        events = rec.get("events", [])
        if not isinstance(events, list):
            raise ConfigError(f"{where}: 'events' must be a list", file=self.source)
        found_seats = rec.get("seats")
        seats: dict[str, Any] = found_seats if isinstance(found_seats, dict) else {}
        top = {"instance_id": instance_id, "flip": rec.get("flip", False), "repeat": rec.get("repeat", 0)}
        seen: dict[tuple[str, str], int] = {}
        for i, ev in enumerate(events):
            if not isinstance(ev, dict) or "player" not in ev or "tag" not in ev:
                raise ConfigError(f"{where}: events[{i}] needs 'player', 'tag' and 'content'", file=self.source)
            content = ev.get("content", ev.get("text"))
            if not isinstance(content, str):
                raise ConfigError(f"{where}: events[{i}].content must be a string", file=self.source)
            pair = (str(ev["player"]), str(ev["tag"]))
            occurrence = seen.get(pair, 0)
            seen[pair] = occurrence + 1
            found = seats.get(ev["player"])
            seat: dict[str, Any] = found if isinstance(found, dict) else {}
            values = {**top, "player": ev["player"], "tag": ev["tag"], "round": ev.get("round"),
                      "role": ev.get("role", seat.get("role")), "index": occurrence}
            key = tuple(_norm(values[f]) for f in self.args.match)
            bucket = self._index.setdefault(key, [])
            if content not in bucket:
                bucket.append(content)

    def __len__(self) -> int:
        return len(self._index)

    # -- lookup ------------------------------------------------------------------------------
    def _key(self, req: GenerateRequest) -> tuple[str, ...]:
        ctx = req.context
        key = []
        for f in self.args.match:
            value = ctx.get(f)
            if value is None and f == "index":
                value = ctx.get("round")
            if value is None:
                raise BackendError(f"replay model {self.name!r}: request context has no {f!r} "
                                   f"(needed by match={list(self.args.match)}; context={ctx})")
            key.append(_norm(value))
        return tuple(key)

    def lookup(self, req: GenerateRequest) -> str:
        key = self._key(req)
        found = self._index.get(key)
        shown = ", ".join(f"{f}={v}" for f, v in zip(self.args.match, key, strict=True))
        if not found:
            raise BackendError(f"replay model {self.name!r}: no recorded speech for {shown} in {self.source}")
        if len(found) > 1:
            if self.args.duplicates == "error":
                raise BackendError(
                    f"replay model {self.name!r}: {len(found)} different recorded speeches for {shown} in "
                    f"{self.source}; add 'flip' or 'repeat' to match, or set duplicates: first|last")
            return found[0] if self.args.duplicates == "first" else found[-1]
        return found[0]

    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        out = []
        for req in requests:
            text = self.lookup(req)
            if req.assistant_prefix and text.startswith(req.assistant_prefix):
                text = text[len(req.assistant_prefix):]
            usage = Usage(prompt_tokens=prompt_tokens(req.messages, req.assistant_prefix),
                          completion_tokens=count_tokens(text))
            out.append(Completion(text=text, usage=usage))
        return out
