"""Shared value types used by every layer (models, games, agents, engine).

They live at the bottom of the dependency graph so that games and models never import each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "user", "assistant"]


M = TypeVar("M", bound=BaseModel)


def new(cls: type[M], **fields: Any) -> M:
    """`cls(**fields)`, validated: kept as a name for the engine's many record constructions."""
    return cls(**fields)


def variant(model: M, **changes: Any) -> M:
    """A validated copy of `model` with some fields replaced (a request's sampling with its own
    seed and candidate count). Validated again, so a bad value fails here with pydantic's message,
    and cached properties of the original are never carried over."""
    data = {name: getattr(model, name) for name in model.model_fields_set}
    return type(model).model_validate({**data, **changes})


class Strict(BaseModel):
    """Base for every config/record type: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid")


class Message(Strict):
    role: Role
    content: str


class Sampling(Strict):
    """Decoding settings for one request. `seed` makes sampling reproducible per request."""

    max_new_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    stop: list[str] = Field(default_factory=list)
    seed: int | None = None
    n: int = Field(1, ge=1)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def group_key(self) -> tuple:
        """Requests with equal keys can share one batched HF `generate` call (seed is per row)."""
        return (self.max_new_tokens, self.temperature, self.top_p, tuple(self.stop))


class GenerateRequest(Strict):
    messages: list[Message]
    sampling: Sampling = Field(default_factory=Sampling)
    # Text the assistant turn already starts with (e.g. "Answer:"); the completion continues it.
    assistant_prefix: str = ""
    # Named LoRA adapter to use on a multi-adapter base model (hf backend); None = base/default.
    adapter: str | None = None
    # Opaque labels (episode id, instance id, player, tag, turn) for backends that need to know
    # where a request comes from (replay, human). Never sent to remote APIs.
    context: dict[str, Any] = Field(default_factory=dict)


class ScoreRequest(Strict):
    """Log-probability of each option as the assistant's next continuation of `messages`."""

    messages: list[Message]
    options: list[str] = Field(min_length=1)
    assistant_prefix: str = ""
    adapter: str | None = None
    context: dict[str, Any] = Field(default_factory=dict)


class Usage(Strict):
    prompt_tokens: int = 0
    completion_tokens: int = 0


FinishReason = Literal["stop", "length", "error"]


class Completion(Strict):
    text: str
    finish_reason: FinishReason = "stop"
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    # True when the backend's text held code points that cannot be stored as UTF-8 (lone
    # surrogates) and they were replaced by U+FFFD where the text entered (`Model.generate`).
    sanitized: bool = False
    # The decoder's last hidden state at the prompt's last token, when the backend was asked for it
    # (`HFModel.record_hidden`: PPO's values from the rollout, without a values pass). In memory
    # only: never written to a record file.
    hidden: list[float] | None = Field(None, exclude=True, repr=False)


Op = Literal["generate", "score"]


@dataclass(slots=True)
class ModelCall:
    """One request an agent wants executed on the model registered under `model` (an alias).

    Agents yield lists of these; the runner batches them across live episodes.
    Result types: generate -> list[Completion] (n of them); score -> list[float] (one per option).
    A plain dataclass, not a validated model: it only carries already-validated parts between
    the agent and the runner, several times per episode.
    """

    model: str
    op: Op
    request: GenerateRequest | ScoreRequest
    # Free-form labels for the record (player, tag such as "speech"/"verdict"/"scratchpad").
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.op not in ("generate", "score"):
            raise ValueError(f"ModelCall.op must be 'generate' or 'score', got {self.op!r}")
