"""Turning a model's reply into one simulator command, and checking it against the valid ones.

Small models wrap commands in prompts ("> take knife"), quotes, code fences, bullets or a trailing
period, and write articles the simulator's parser does not know ("take the knife"). The first
non-empty line is the command; the rest is ignored.
"""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^(?:>+|[-*•]|\d+[.)]|(?:command|action|your command)\s*:)\s*", re.IGNORECASE)
_QUOTES = "`'\"“”‘’"
_ARTICLES = re.compile(r"\b(?:the|a|an|some)\b\s*", re.IGNORECASE)


def parse_command(reply: str) -> str:
    """The command in a reply: its first non-empty line (after a code fence), without prompt
    markers, quotes or a final period, lower-cased with single spaces ("" if there is none)."""
    for line in reply.splitlines():
        text = line.strip()
        if not text or text.startswith("```"):
            continue
        for _ in range(3):  # "> `take knife`" needs more than one pass
            stripped = _PREFIX.sub("", text).strip().strip(_QUOTES).strip()
            if stripped == text:
                break
            text = stripped
        text = text.rstrip(".!").strip().strip(_QUOTES)
        return " ".join(text.lower().split())
    return ""


def match_command(command: str, valid: list[str] | set[str]) -> str | None:
    """The valid command `command` means: itself, or itself without articles; None if neither."""
    if command in valid:
        return command
    bare = " ".join(_ARTICLES.sub("", command).split())
    return bare if bare in valid else None
