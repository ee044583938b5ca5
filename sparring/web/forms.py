"""Posted forms and their validation: each answer is checked here before it reaches the engine,
so a bad value (a count that is not a whole number, a probability outside 0-100) is refused
with a clear message and changes nothing."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import Request

MAX_FORM_BYTES = 256 * 1024
MAX_TEXT = 20_000


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body as a dict (last value of a repeated key wins); no multipart."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {}
    return dict(parse_qsl(text, keep_blank_values=True))


def text_answer(fields: dict[str, str]) -> str:
    text = (fields.get("text") or "").strip()
    if not text:
        raise ValueError("please write something before sending")
    if len(text) > MAX_TEXT:
        raise ValueError(f"the text is too long ({len(text)} characters; at most {MAX_TEXT})")
    return text


def judge_answer(fields: dict[str, str], n_options: int) -> list[float]:
    """A probability 0-100 for the first option; the rest share the remainder equally."""
    raw = (fields.get("probability") or "").strip().rstrip("%").strip()
    try:
        p = float(raw)
    except ValueError:
        raise ValueError(f"the probability must be a number from 0 to 100, got {raw!r}") from None
    if not 0.0 <= p <= 100.0 or p != p:
        raise ValueError(f"the probability must be between 0 and 100, got {raw}")
    p /= 100.0
    if n_options <= 1:
        return [1.0]
    return [p] + [(1.0 - p) / (n_options - 1)] * (n_options - 1)

