"""A tokenizer that TRL's tool-calling GRPO accepts, for any model sparring can load.

TRL's `GRPOTrainer(environment_factory=...)` needs a chat template that renders a whole tool
exchange (user -> assistant with `tool_calls` -> tool), keeps earlier turns unchanged when later
ones are added, and a response parser that finds the calls in what the model wrote. The bundled
SmolLM2-135M-Instruct has a plain ChatML template without tools, which TRL refuses. `tool_tokenizer`
keeps a template that already supports tool calls; a ChatML template without them is replaced by
sparring's `chatml_tools.jinja` (the same text without tools, and Hermes / Qwen 2.5 `<tool_call>`
JSON with them), and the matching response parser is set. Any other template is an error that says
what to pass instead.

    from sparring.integrations.trl.tokenizer import model_source, tool_tokenizer
    trainer = GRPOTrainer(model=model_source("bundled:smollm2-135m"),
                          processing_class=tool_tokenizer("bundled:smollm2-135m"), environment_factory=Env, ...)
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from sparring.errors import ConfigError

CHATML_START = "<|im_start|>"
TOOL_TEMPLATE = "chatml_tools.jinja"

# transformers' response parser (`tokenizer.response_template`, transformers >= 5.13) for
# chatml_tools.jinja: the assistant's text, then any number of <tool_call> JSON objects
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {"open": "<tool_call>", "close_pattern": r"</tool_call>\s*", "repeats": True,
                       "content": "json", "transform": {"type": "function", "function": "{content}"}},
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


def chatml_tool_template() -> str:
    """sparring's ChatML template with tool calls (`sparring/models/templates/chatml_tools.jinja`)."""
    return (files("sparring.models") / "templates" / TOOL_TEMPLATE).read_text()


def model_source(model: str, revision: str | None = None) -> str:
    """What TRL's `model=` takes for `model`: the directory of `bundled:<name>`, a local path, or a
    Hugging Face id (checked first, so a typo is one clear error rather than a download trace)."""
    from sparring.models.hub import resolve_source

    return resolve_source(model, "model", revision=revision)


def tool_tokenizer(model: str, revision: str | None = None) -> Any:
    """The tokenizer of `model` (as `model_source` takes it) with a chat template TRL's tool-calling
    GRPO accepts and a response parser for its calls (see the module's docstring)."""
    from transformers import AutoTokenizer

    from sparring.models.hub import load_kwargs

    source = model_source(model, revision)
    tokenizer = AutoTokenizer.from_pretrained(source, **load_kwargs(source, revision))
    return with_tool_template(tokenizer, model)


def with_tool_template(tokenizer: Any, name: str = "the model") -> Any:
    """`tokenizer` made ready for tool calls in place (and returned): its own template kept when it
    renders tool calls, a ChatML one without them replaced by sparring's; the response parser set
    when the tokenizer has none."""
    from trl import supports_tool_calling

    ours = chatml_tool_template()
    if not supports_tool_calling(tokenizer):
        template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
        if CHATML_START not in template:
            raise ConfigError(f"the chat template of {name} renders no tool calls and is not ChatML, so sparring has no "
                              "tool-calling template for it: pass a tokenizer whose template supports tools (TRL's "
                              "trl/chat_templates hold several) or set tokenizer.chat_template yourself",
                              key="chat_template")
        tokenizer.chat_template = ours
    has_parser = getattr(tokenizer, "response_template", None) is not None or \
        getattr(tokenizer, "response_schema", None) is not None
    if tokenizer.chat_template == ours and not has_parser:  # other tool templates: TRL sets the parsers it knows
        _set_parser(tokenizer)
    return tokenizer


def _set_parser(tokenizer: Any) -> None:
    """The response parser of chatml_tools.jinja (transformers' `response_template`, 5.13 on)."""
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version("5.13.0"):
        raise ConfigError(f"parsing tool calls of sparring's ChatML template needs transformers >= 5.13 (its "
                          f"response_template); installed: {transformers.__version__}", key="chat_template")
    tokenizer.response_template = RESPONSE_TEMPLATE
