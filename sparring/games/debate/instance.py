"""One debate question: the story, the question and exactly two candidate answers."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from sparring.gameapi.game import Instance


class DebateInstance(Instance):
    """A two-answer question about a background text.

    Loaders of datasets with more options reduce them to (correct, best distractor) so every
    format (debate, consultancy, naive judge) compares the same two answers.
    """

    question: str = Field(min_length=1)
    answers: list[str] = Field(min_length=2, max_length=2)
    correct: int = Field(ge=0, le=1)
    background: str = ""
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("answers")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if any(not a.strip() for a in v):
            raise ValueError("answers must be non-empty strings")
        if v[0].strip() == v[1].strip():
            raise ValueError("the two answers must differ")
        return v

    @model_validator(mode="after")
    def _strip(self) -> DebateInstance:
        self.question = self.question.strip()
        return self
