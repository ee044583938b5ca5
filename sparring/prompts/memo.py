"""A memo of template renders, keyed on what each template reads; one per game instance (a run).

Why: games render the same instructions over and over (turn prompts, an opponent's message
wrapper, verdict prompts), for every viewer and episode, at tens of microseconds per Jinja render.
Keyed on the template's source and the values of only the variables it reads
(`template_references`), a render is reused whenever its wording would be the same, however many
pools, stories or seats the run has; the key is exact, so a hit is always the right text. The memo
belongs to the game object of one experiment, so nothing outlives the run that filled it.
"""

from __future__ import annotations

from typing import Any

from sparring.prompts.promptset import PromptSet, template_references


def _frozen(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


class RenderMemo:
    """Renders by (template source, values it reads), within an entry and a character budget.

    The character budget matters: a rule text that embeds a story (QuALITY: ~30 KB) is unique per
    question and seat, so without it a long tournament would keep every story's prompts alive.
    """

    def __init__(self, max_entries: int = 50_000, max_chars: int = 16_000_000):
        self.max_entries, self.max_chars = max_entries, max_chars
        self.entries: dict[tuple, str] = {}
        self.chars = 0

    def render(self, prompts: PromptSet, tag: str, variant: int, variables: dict[str, Any]) -> str:
        """`prompts.render(tag, variant, **variables)`, memoised. Unknown tags, templates that do
        not parse and missing variables go straight to `render`, which raises its clear error."""
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
        key = (source, _frozen(values))
        hit = self.entries.get(key)
        if hit is None:
            hit = prompts.render(tag, variant, **variables)
            self._remember(key, hit)
        return hit

    def _remember(self, key: tuple, text: str) -> None:
        """Store a render; the memo is emptied when it passes its entry or character budget."""
        if len(self.entries) >= self.max_entries or self.chars + len(text) > self.max_chars:
            self.entries.clear()
            self.chars = 0
        self.entries[key] = text
        self.chars += len(text)
