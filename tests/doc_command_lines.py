"""Finding the command lines of markdown: the lines of shell code blocks (```bash, ```sh, ```shell,
```console, unlabelled; with `$ ` prompts only the prompted lines) and the inline code spans of prose
that start with `sparring `, `python scripts/`, `python benchmarks/` or `bash scripts/` (after any
`VAR=value`), each split into simple commands at `&&`, `||`, `;`, `|` and `&`. What each command is
checked against is tests/doc_commands.py."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "console", "shell-session", "shellsession", "zsh"})
INLINE_PREFIXES = ("sparring ", "python scripts/", "python benchmarks/", "bash scripts/", "python -m sparring")

_FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")
_PROMPT = re.compile(r"^[ \t]*\$ ")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_PLACEHOLDER = re.compile(r"<([A-Za-z][\w.-]*)>")  # `<config>`: a placeholder, not a redirect
_FD_REDIRECT = re.compile(r"(?<=\s)\d(?=>)")  # the `2` of `2>&1`
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_LEADING_ENV = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)+")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "|&", ";;"})


@dataclass(frozen=True)
class CommandLine:
    line: int  # 1-based line of the markdown file where the command starts
    text: str  # prompt removed, continuation lines joined


# ---------------------------------------------------------------- finding command lines


def extract(markdown: str) -> list[CommandLine]:
    """The command lines of shell code blocks and the command-like inline code spans of the prose."""
    lines = markdown.splitlines()
    prose = list(lines)
    found: list[CommandLine] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, info = m["fence"], m["info"].strip()
        lang = info.split()[0].strip("{}").lstrip(".").lower() if info else ""
        start, i = i, i + 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and not _closes(lines[i], fence):
            body.append((i + 1, lines[i]))
            i += 1
        for k in range(start, min(i + 1, len(lines))):
            prose[k] = ""
        i += 1
        if lang in SHELL_FENCES:
            found += _block_commands(body)
    found += _inline_commands("\n".join(prose))
    return sorted(found, key=lambda c: c.line)


def _closes(line: str, fence: str) -> bool:
    s = line.strip()
    return len(s) >= len(fence) and set(s) == {fence[0]}


def _block_commands(body: list[tuple[int, str]]) -> list[CommandLine]:
    """With `$ ` prompts in a block only the prompted lines are commands (the rest is output)."""
    prompted = any(_PROMPT.match(text) for _, text in body)
    found: list[CommandLine] = []
    start = 0
    parts: list[str] = []  # a command continued with backslashes
    for no, raw in body:
        text = raw.strip()
        if not parts:
            if prompted:
                m = _PROMPT.match(raw)
                if not m:
                    continue
                text = raw[m.end():].strip()
            if not text or text.startswith("#"):
                continue
            start = no
        continued = text.endswith("\\")
        parts.append(text[:-1].strip() if continued else text)
        if not continued:
            found.append(CommandLine(start, " ".join(p for p in parts if p)))
            parts = []
    if parts:
        found.append(CommandLine(start, " ".join(p for p in parts if p)))
    return found


def _inline_commands(prose: str) -> list[CommandLine]:
    found: list[CommandLine] = []
    offset = 0
    for paragraph in _BLANK_LINE.split(prose):
        offset = prose.index(paragraph, offset)
        for m in _SPAN.finditer(paragraph):
            text = " ".join(m.group(2).replace("\\|", "|").split())  # `\|`: a pipe in a table cell
            if _LEADING_ENV.sub("", text).startswith(INLINE_PREFIXES):  # `OMP_NUM_THREADS=2 python ...` too
                found.append(CommandLine(prose.count("\n", 0, offset + m.start()) + 1, text))
        offset += len(paragraph)
    return found


def segments(text: str) -> list[list[str]]:
    """The simple commands of a command line, as argument lists: operators split it, redirections and
    comments are dropped, `[`/`]` brackets and `...` are stripped. Raises ValueError (unbalanced quotes)."""
    text = _FD_REDIRECT.sub("", _PLACEHOLDER.sub(r"\1", text.replace("\\\n", " ")))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    skip = False
    for token in lexer:
        if skip:
            skip = False
        elif token in _SEPARATORS:
            parts.append([])
        elif set(token) <= set("<>&|"):  # a redirection: drop it and its target
            skip = True
        elif set(token) <= set("()"):
            continue
        else:
            token = token.lstrip("[")
            token = token if "[" in token else token.rstrip("]")  # `[--resume DIR]`, but `.[dev]` stays
            if token.endswith(("...", "…")):
                token = token.rstrip(".…")
            if token:
                parts[-1].append(token)
    return [p for p in parts if p]
