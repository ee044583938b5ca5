"""One training sequence per episode: the learner's whole conversation, with only its own tokens
trained (`env_mask` = 1) and the partners' and the game's tokens masked out (0).

The sequence is the conversation the learner was shown at its last turn (which holds its earlier
replies as assistant turns) plus its last reply, rendered with a chat template that marks assistant
tokens (`{% generation %}`), so the masks come from the template itself, not from string search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparring.records.record import EpisodeRecord
from sparring.train.export.conversation import own_calls, reply_text


@dataclass
class Sequence:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    learner_turns: int


def learner_sequence(record: EpisodeRecord, player: str, tokenizer: Any) -> Sequence | None:
    """The learner's sequence in `record` (None if it never replied)."""
    calls = own_calls(record, player, with_corrections=True)
    last = next((c for c in reversed(calls) if reply_text(c) is not None), None)
    if last is None:
        return None
    conv = [{"role": m.role, "content": m.content} for m in last.messages]
    conv.append({"role": "assistant", "content": reply_text(last) or ""})
    enc = tokenizer.apply_chat_template(conv, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = list(enc["input_ids"]), list(enc["assistant_masks"])
    if 1 in mask:  # end at the learner's last token (its end-of-turn), not at the template's newline
        end = len(mask) - mask[::-1].index(1)
        ids, mask = ids[:end], mask[:end]
    first = mask.index(1) if 1 in mask else len(ids)
    return Sequence(prompt_ids=ids[:first], completion_ids=ids[first:], env_mask=mask[first:],
                    learner_turns=sum(1 for m in conv if m["role"] == "assistant"))
