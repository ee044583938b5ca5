"""A process-wide memo of template renders, keyed on what each template reads.

Why: games render the same instructions over and over (turn prompts, an opponent's message
wrapper, verdict prompts), for every viewer and episode, at tens of microseconds per Jinja render.
Keyed on the template's source and the values of only the variables it reads
(`PromptSet.references`), a render is reused whenever its wording would be the same, however
many pools, stories or seats the run has; the key is exact, so a hit is always the right text.
"""

from __future__ import annotations

from typing import Any

from sparring.prompts.promptset import PromptSet, template_references

_MEMO: dict[tuple, str] = {}
_MEMO_MAX = 50_000  # entries
# Characters held. A rule text that embeds a story (QuALITY: ~30 KB) is unique per question and
# seat, so without a size budget a long tournament would keep every story's prompts alive.
_MEMO_MAX_CHARS = 16_000_000
_memo_chars = 0


def _frozen(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


def render_memo(prompts: PromptSet, tag: str, variant: int, variables: dict[str, Any]) -> str:
    """`prompts.render(tag, variant, **variables)`, memoised on (template source, values of the
    variables it reads). Unknown tags, templates that do not parse and missing variables go
    straight to `render`, which raises its usual clear error."""
    options = prompts.templates.get(tag)
    if not options:
        return prompts.render(tag, variant, **variables)
    source = options[variant % len(options)]
    used = template_references(source)
    if used is None:
        return prompts.render(tag, variant, **variables)
    try:
        values = tuple([variables[u] for u in used])
    except KeyError:
        return prompts.render(tag, variant, **variables)
    try:
        key = (source, values)
        hit = _MEMO.get(key)  # tuples and scalars hash as they are
    except TypeError:  # a list/dict among the values
        key = (source, _frozen(values))
        hit = _MEMO.get(key)
    if hit is None:
        hit = prompts.render(tag, variant, **variables)
        _remember(key, hit)
    return hit


def _remember(key: tuple, text: str) -> None:
    """Store a render; the memo is emptied when it passes its entry or character budget."""
    global _memo_chars
    if len(_MEMO) >= _MEMO_MAX or _memo_chars + len(text) > _MEMO_MAX_CHARS:
        _MEMO.clear()
        _memo_chars = 0
    _MEMO[key] = text
    _memo_chars += len(text)
