"""Chat templates of the model families people train, written as fixtures that render each family's
documented format (the official templates, without tool calling), and a tokenizer for each: the
bundled SmolLM2 tokenizer with the special tokens that format needs added.

`END[family]` is what closes an assistant turn; `REPLY[family](content, last)` is how the family
renders a reply's text inside the conversation (what the assistant mask must cover, before the
end-of-turn token).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

LLAMA3 = (
    "{{- '<|begin_of_text|>' }}"
    "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] | trim %}"
    "{%- set messages = messages[1:] %}{%- else %}{%- set system_message = '' %}{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\n' }}"
    "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n' }}"
    "{{- system_message }}{{- '<|eot_id|>' }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim"
    " + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)

QWEN25 = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or "
    "(message.role == 'assistant') %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Qwen3: the reasoning of a turn before the last user message is dropped; the turns after it keep
# a <think> block (an empty one for the final reply without reasoning).
QWEN3 = (
    "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}"
    "{%- for message in messages[::-1] %}{%- set index = (messages|length - 1) - loop.index0 %}"
    "{%- if ns.multi_step_tool and message.role == 'user' %}{%- set ns.multi_step_tool = false %}"
    "{%- set ns.last_query_index = index %}{%- endif %}{%- endfor %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = message.content %}{%- set reasoning_content = '' %}"
    "{%- if '</think>' in content %}"
    "{%- set reasoning_content = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}"
    "{%- set content = content.split('</think>')[-1].lstrip('\\n') %}{%- endif %}"
    "{%- if loop.index0 > ns.last_query_index %}"
    "{%- if loop.last or (not loop.last and reasoning_content) %}"
    "{{- '<|im_start|>' + message.role + '\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n'"
    " + content.lstrip('\\n') }}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + content }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + content }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}"
)

# Mistral's [INST] format (v0.1 / v0.2 instruct): the system prompt goes into the first user
# message; roles must alternate.
MISTRAL = (
    "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content'] %}"
    "{%- set loop_messages = messages[1:] %}{%- else %}{%- set loop_messages = messages %}{%- endif %}"
    "{{- '<s>' }}"
    "{%- for message in loop_messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}{%- endif %}"
    "{%- if message['role'] == 'user' %}"
    "{%- if loop.first and system_message is defined %}"
    "{{- '[INST] ' + system_message + '\\n\\n' + message['content'] + ' [/INST]' }}"
    "{%- else %}{{- '[INST] ' + message['content'] + ' [/INST]' }}{%- endif %}"
    "{%- elif message['role'] == 'assistant' %}{{- ' ' + message['content'] + '</s>' }}"
    "{%- else %}{{- raise_exception('Only user and assistant roles are supported!') }}{%- endif %}"
    "{%- endfor %}"
)

# Gemma 2: no system role at all (the template raises), roles must alternate, "model" turns.
GEMMA = (
    "{{ '<bos>' }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
    "{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"
)

# Phi-3 / Phi-3.5: <|role|> headers, <|end|> closes every turn, the end-of-text token after the
# whole conversation when no reply is asked for.
PHI3 = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{'<|system|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif message['role'] == 'user' %}{{'<|user|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\\n' + message['content'] + '<|end|>\\n'}}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% else %}{{ '<|endoftext|>' }}{% endif %}"
)

# Phi-4: ChatML with <|im_sep|> after the role.
PHI4 = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '<|im_sep|>' + message['content'] + '<|im_end|>'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant<|im_sep|>' }}{% endif %}"
)

TEMPLATES: dict[str, str | None] = {
    "llama3": LLAMA3, "qwen2.5": QWEN25, "qwen3": QWEN3, "mistral": MISTRAL, "gemma": GEMMA,
    "phi3": PHI3, "phi4": PHI4, "base": None,
}
SPECIAL: dict[str, list[str]] = {
    "llama3": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    "qwen2.5": [], "qwen3": [], "mistral": ["<s>", "</s>", "[INST]", "[/INST]"],
    "gemma": ["<bos>", "<start_of_turn>", "<end_of_turn>"],
    "phi3": ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"],
    "phi4": ["<|im_sep|>"], "base": [],
}
END = {"llama3": "<|eot_id|>", "qwen2.5": "<|im_end|>", "qwen3": "<|im_end|>", "mistral": "</s>",
       "gemma": "<end_of_turn>", "phi3": "<|end|>", "phi4": "<|im_end|>", "base": "<|im_end|>"}


def _qwen3(content: str, last: bool) -> str:
    if "</think>" in content:
        reasoning = content.split("</think>")[0].rstrip("\n").split("<think>")[-1].lstrip("\n")
        answer = content.split("</think>")[-1].lstrip("\n")
    else:
        reasoning, answer = "", content
    return f"<think>\n{reasoning.strip()}\n</think>\n\n{answer}" if last else answer


REPLY: dict[str, Callable[[str, bool], str]] = {
    "llama3": lambda c, last: c.strip(), "qwen2.5": lambda c, last: c, "qwen3": _qwen3,
    "mistral": lambda c, last: " " + c, "gemma": lambda c, last: c.strip(), "phi3": lambda c, last: c,
    "phi4": lambda c, last: c, "base": lambda c, last: c,
}


def family_tokenizer(family: str, base):
    """A copy of `base` (the bundled tokenizer) speaking `family`'s format; `base` for a model
    without a template has none."""
    from transformers import AddedToken

    tok = copy.deepcopy(base)
    new = [t for t in SPECIAL[family] if t not in tok.get_vocab()]
    if new:
        tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in new], special_tokens=True)
    tok.chat_template = TEMPLATES[family]
    tok.name_or_path = f"fixture/{family}"
    return tok
