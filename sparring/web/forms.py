"""Posted forms and their validation: each answer is checked here before it reaches the engine,
so a bad value (a count that is not a whole number, a probability outside 0-100) is refused
with a clear message and changes nothing."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import HTTPException, Request

MAX_FORM_BYTES = 256 * 1024
MAX_TEXT = 20_000
MAX_DIGITS = 6  # counts and sequence numbers: anything longer is not a number a form sends
FORM_TYPE = "application/x-www-form-urlencoded"


async def form_fields(request: Request) -> dict[str, str]:
    """An urlencoded form body as a dict (last value of a repeated key wins). Refused with the
    right status before anything else (the CSRF check included) looks at it: multipart or any
    other type 415, over `MAX_FORM_BYTES` 413 (read no further), not UTF-8 400."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in ("", FORM_TYPE):
        raise HTTPException(415, f"forms are sent as {FORM_TYPE}, not {ctype}")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared[:12]) > MAX_FORM_BYTES:
        raise HTTPException(413, f"the form is too large (at most {MAX_FORM_BYTES // 1024} KiB)")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, f"the form is too large (at most {MAX_FORM_BYTES // 1024} KiB)")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "the form is not valid UTF-8 text") from None
    return dict(parse_qsl(text, keep_blank_values=True))


class TooLarge(ValueError):
    """A number with more digits than any form sends (answered 422, not Python's int-limit error)."""


def whole_number(raw: str, what: str) -> int:
    """A non-negative whole number of at most MAX_DIGITS digits (ValueError with a message)."""
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()):
        raise ValueError(f"{what} must be a whole number, got {raw[:40]!r}")
    if len(raw) > MAX_DIGITS:
        raise TooLarge(f"{what} is too large ({len(raw)} digits)")
    return int(raw)


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
    if len(raw) > 40:
        raise TooLarge(f"the probability must be a number from 0 to 100, got {len(raw)} characters")
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

