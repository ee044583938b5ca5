"""Chat templates with `{% generation %}` markers, applied by model family.

TRL's assistant-only SFT loss needs the template to mark the assistant's tokens; SmolLM2's ChatML
template (and most shipped templates) has no markers and TRL cannot add them. The patched
templates here render byte-identically to the originals (tested), so training sees exactly the
text the model is prompted with at play time, and only the assistant's replies (and their
end-of-turn token) carry loss.
"""

from __future__ import annotations

from pathlib import Path

from sparring.errors import SparringError

_HERE = Path(__file__).parent / "templates"
# family -> (a substring that identifies the original template, the patched template file)
FAMILIES = {
    "smollm2-chatml": ("You are a helpful AI assistant named SmolLM", "smollm2_chatml.jinja"),
}


def has_generation_markers(template: str | None) -> bool:
    return bool(template) and "{% generation %}" in str(template)


def patched_template(template: str | None) -> str | None:
    """The marker version of `template` (None if no family matches; a template that already has
    markers is returned as it is)."""
    if template and has_generation_markers(template):
        return template
    for marker, filename in FAMILIES.values():
        if template and marker in template:
            return (_HERE / filename).read_text(encoding="utf-8")
    return None


def apply_generation_markers(tokenizer) -> None:
    """Give `tokenizer` a template with generation markers, or say clearly that it cannot be done."""
    template = getattr(tokenizer, "chat_template", None)
    patched = patched_template(template)
    if patched is None:
        raise SparringError("assistant-only SFT needs a chat template with {% generation %} markers and no "
                            f"patched template matches this tokenizer's (known families: {', '.join(FAMILIES)}); "
                            "set `assistant_only_loss: false` or give `chat_template` with markers")
    tokenizer.chat_template = patched
