"""Rendering a conversation with a model's chat template: the one place play and training do it.

The `hf` backend renders every prompt here, and the trainers render every training row here, so a
model is trained on exactly the text it is prompted with. Two things every family needs:

- **Templates without a system role** (Gemma 2, Mistral's older templates) raise on a `system`
  message; games always send one. Then the system text goes in front of the first user message,
  as Gemma 3's own template does (`merge_system`). Templates that demand strictly alternating
  roles raise on two user messages in a row (a partner's message, then the game's); then
  consecutive messages of one role are joined (`merge_runs`). The first variant the template
  accepts is used, decided per conversation, so a prompt and its training row match.
- **Base models without a template** get `PLAIN_CHAT_TEMPLATE`: `role: content` turns, the
  assistant's turns closed by the end-of-sequence token, so a model trained on it learns to stop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparring.errors import SparringError

# Used only when a tokenizer has no chat template (base models). The end-of-sequence token after
# each assistant turn is what generation stops at, and what training teaches the model to emit.
PLAIN_CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}"
    "{% if m['role'] == 'assistant' %}{{ eos_token or '' }}{% endif %}{{ '\\n\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)


class ChatTemplateError(SparringError):
    """The chat template cannot render a conversation (a Jinja error, a role it rejects)."""


def as_dicts(messages: Sequence[Any]) -> list[dict[str, str]]:
    """Messages as plain `{"role", "content"}` dicts (accepts dicts and `Message` objects)."""
    out = []
    for m in messages:
        if isinstance(m, Mapping):
            out.append({"role": str(m["role"]), "content": str(m["content"])})
        else:
            out.append({"role": str(m.role), "content": str(m.content)})
    return out


def merge_system(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The system messages' text moved in front of the first user message (for templates that have
    no system role); a conversation of system messages only becomes one user message."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    rest = [dict(m) for m in messages if m["role"] != "system"]
    if not system:
        return rest
    for m in rest:
        if m["role"] == "user":
            m["content"] = f"{system}\n\n{m['content']}"
            return rest
    return [{"role": "user", "content": system}, *rest]


def merge_runs(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Consecutive messages of the same role joined into one (for templates that demand
    alternating roles)."""
    out: list[dict[str, str]] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            out[-1] = {"role": m["role"], "content": f"{out[-1]['content']}\n\n{m['content']}"}
        else:
            out.append(dict(m))
    return out


def _apply(tokenizer: Any, template: str | None, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
    if template is not None:
        kwargs["chat_template"] = template
    return tokenizer.apply_chat_template(messages, **kwargs)


def normalize(tokenizer: Any, template: str | None, messages: Sequence[Any]) -> list[dict[str, str]]:
    """The messages as this template can render them: unchanged, or with the system text merged
    into the first user turn when the template rejects the system role."""
    msgs = as_dicts(messages)
    first: Exception | None = None
    for variant in (msgs, merge_system(msgs), merge_runs(merge_system(msgs))):
        try:
            _apply(tokenizer, template, variant, add_generation_prompt=False)
            return variant
        except Exception as exc:  # jinja raise_exception('System role not supported') and the like
            first = first or exc
    raise ChatTemplateError(f"{model_name(tokenizer)}: the chat template failed: {first}")


def render(tokenizer: Any, template: str | None, messages: Sequence[Any], add_generation_prompt: bool,
           normalized: bool = False) -> str:
    """The conversation as text (`normalized`: the messages already went through `normalize`)."""
    msgs = as_dicts(messages)
    try:
        return _apply(tokenizer, template, msgs, add_generation_prompt)
    except Exception as exc:
        if normalized:
            raise ChatTemplateError(f"{model_name(tokenizer)}: the chat template failed: {exc}") from None
    return render(tokenizer, template, normalize(tokenizer, template, msgs), add_generation_prompt, normalized=True)


def model_name(tokenizer: Any) -> str:
    """The model a tokenizer belongs to, for error messages."""
    return str(getattr(tokenizer, "name_or_path", "") or "the model")
