"""Which tokens of a conversation are the assistant's: computed by sparring, for any chat template.

TRL's assistant-only loss needs `{% generation %}` markers that almost no shipped template has.
Instead, every assistant turn is located in the rendered conversation the way the model meets it
at play time:

- its turn starts where the conversation before it, rendered with the generation prompt, ends
  (that rendering must be a prefix of the whole conversation, else the model would be trained in
  a context it is never prompted with);
- it ends with the first special token after that start (`<|im_end|>`, `<|eot_id|>`,
  `<end_of_turn>`, `<|end|>`, `</s>`, the end-of-sequence token of the plain template), which is
  trained too, so the model learns to stop; the reply's text must be what precedes it (templates
  may trim it, or drop an earlier turn's reasoning, as Qwen3's does).

The text is then tokenised segment by segment (context, reply, context, ...), so a trained token
never straddles a reply's edge. Anything that cannot be aligned is an `AlignmentError` naming the
model and the turn, never loss on the prompt. SFT rows, DPO/KTO pairs and the soft-preference
loss all go through `mask_chat`; GRPO and PPO train the token ids the model sampled (`online/sequence.py`),
in the prompt the same renderer built.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sparring.errors import SparringError
from sparring.models.chat import model_name, normalize, render


class AlignmentError(SparringError):
    """The chat template's rendering of a conversation cannot be split into prompt and replies."""


@dataclass
class MaskedChat:
    input_ids: list[int]
    assistant_masks: list[int]  # 1: a trained assistant token (reply + its end-of-turn token)
    text: str  # the rendered conversation
    spans: list[tuple[int, int]]  # character spans of the trained turns in `text`

    def trained_text(self) -> list[str]:
        return [self.text[a:b] for a, b in self.spans]


def end_tokens(tokenizer: Any) -> list[str]:
    """The special tokens that can end a turn, longest first."""
    tokens = set(getattr(tokenizer, "all_special_tokens", []) or [])
    decoder = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    tokens.update(t.content for t in decoder.values() if getattr(t, "special", False))
    return sorted((t for t in tokens if t), key=len, reverse=True)


def _first_end(text: str, start: int, ends: list[str]) -> tuple[int, str] | None:
    best: tuple[int, str] | None = None
    for token in ends:  # longest first: at equal positions the longer token wins
        i = text.find(token, start)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, token)
    return best


def visible_reply(content: str) -> str:
    """The part of a reply every template keeps: the text after a reasoning block, stripped."""
    return content.rsplit("</think>", 1)[-1].strip()


def mask_chat(tokenizer: Any, messages: Sequence[Any], trained: Iterable[int] | None = None,
              template: str | None = None) -> MaskedChat:
    """Token ids of the rendered conversation and the mask of its trained assistant turns.
    `trained`: indices (in `messages`) of the assistant turns to train; default every one."""
    original = list(messages)
    roles = [m["role"] if isinstance(m, dict) else m.role for m in original]
    assistant = [i for i, r in enumerate(roles) if r == "assistant"]
    wanted = set(assistant if trained is None else trained)
    if not wanted <= set(assistant):
        raise AlignmentError(f"messages {sorted(wanted - set(assistant))} are not assistant turns")
    ordinals = {n for n, i in enumerate(assistant) if i in wanted}
    msgs = normalize(tokenizer, template, original)
    positions = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
    if len(positions) != len(assistant):
        raise AlignmentError(f"{model_name(tokenizer)}: the chat template merges consecutive assistant turns, so "
                             "they cannot be trained one by one")
    text = render(tokenizer, template, msgs, add_generation_prompt=False, normalized=True)
    ends = end_tokens(tokenizer)
    spans = []
    for n, i in enumerate(positions):
        if n not in ordinals:
            continue
        spans.append(_span(tokenizer, template, msgs, i, text, ends, n))
    return _tokenize(tokenizer, text, spans)


def _span(tokenizer: Any, template: str | None, msgs: list[dict[str, str]], i: int, text: str, ends: list[str],
          n: int) -> tuple[int, int]:
    name = model_name(tokenizer)
    prompt = render(tokenizer, template, msgs[:i], add_generation_prompt=True, normalized=True)
    if not text.startswith(prompt):
        raise AlignmentError(
            f"{name}: the chat template renders the conversation before assistant turn {n + 1} differently "
            "when the conversation goes on (the prompt the model is given is not a prefix of the training "
            "text), so its tokens cannot be trained in the context the model sees; give the model a "
            "`chat_template` that renders earlier turns the same way")
    start = len(prompt)
    found = _first_end(text, start, ends)
    if found is None:
        raise AlignmentError(f"{name}: the chat template ends assistant turn {n + 1} with no special token, so "
                             "the model could never learn to stop; give a `chat_template` that closes assistant "
                             "turns with an end-of-turn token")
    end, token = found
    reply = visible_reply(msgs[i]["content"])
    if not text[start:end].rstrip().endswith(reply):
        raise AlignmentError(f"{name}: assistant turn {n + 1} ({reply[:60]!r}) is not where the chat template "
                             f"puts the turn (found {text[start:end][:80]!r}); give a `chat_template` that "
                             "renders replies as they are")
    return start, end + len(token)


def _tokenize(tokenizer: Any, text: str, spans: list[tuple[int, int]]) -> MaskedChat:
    ids: list[int] = []
    mask: list[int] = []
    pos = 0

    def add(segment: str, bit: int) -> None:
        if segment:
            seg_ids = tokenizer(segment, add_special_tokens=False)["input_ids"]
            ids.extend(seg_ids)
            mask.extend([bit] * len(seg_ids))

    for a, b in spans:
        add(text[pos:a], 0)
        add(text[a:b], 1)
        pos = b
    add(text[pos:], 0)
    return MaskedChat(input_ids=ids, assistant_masks=mask, text=text, spans=spans)


def pair_ids(tokenizer: Any, prompt: Sequence[Any], reply: Sequence[Any],
             template: str | None = None) -> tuple[list[int], list[int]]:
    """(prompt ids, reply ids) of a preference row's side: the reply (one assistant turn) as
    trained, the prompt as the model is given it. What DPO, KTO and the soft loss train on."""
    if len(reply) != 1:
        raise AlignmentError(f"a preference reply must be one assistant message, got {len(reply)}")
    chat = mask_chat(tokenizer, [*prompt, *reply], trained=[len(prompt)], template=template)
    first = chat.assistant_masks.index(1) if 1 in chat.assistant_masks else len(chat.input_ids)
    last = len(chat.assistant_masks) - chat.assistant_masks[::-1].index(1) if 1 in chat.assistant_masks else first
    return chat.input_ids[:first], chat.input_ids[first:last]
