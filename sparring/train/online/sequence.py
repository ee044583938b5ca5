"""The learner's training sequences of one episode, built from the tokens it sampled.

What carries loss (`env_mask` = 1) is exactly the token ids the learner's model sampled, as the
`hf` backend recorded them on each call's `Completion` (`token_ids`, with their `logprobs`), in
order. Everything else is environment (`env_mask` = 0): the system prompt, the partners' and the
game's messages, a prefill such as `[propose] (`, a correction, the chat template's own tokens.
Nothing is re-rendered: the game's rewritten history (a `[message] ` tag it adds, a canonical
proposal) only ever appears as context, where the learner was shown it.

Each call is trained in the context it was sampled in: its prompt is rebuilt with the backend's
own `prompt_ids` (chat template + generation prompt + assistant prefix + context policy) and
checked against the prompt length the backend recorded. Consecutive calls share one sequence
only when the later prompt starts with the earlier prompt followed by the earlier sampled tokens
(an extending conversation), so every trained token still sees exactly what was shown; otherwise
(Deal or No Deal re-renders its history every turn) each call is its own sequence.

A reply cut by `max_new_tokens` has no end-of-turn token among its sampled ids, so none is
trained. Rejected replies are not trained unless `train_rejected` (then they carry the episode's
advantage like any other call: with a `format_penalty` this pushes them down); either way the
rejected reply and the correction are context of the retry, as the learner saw them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from sparring.errors import SparringError
from sparring.records.record import CallRecord, EpisodeRecord
from sparring.train.export.conversation import SIDE_PURPOSES
from sparring.types import Completion

# calls made with the learner's model that are not its own moves (best-of-N look-ahead of an opponent)
NOT_OWN_TAGS = ("bon_opponent",)


@dataclass
class Sequence:
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]  # sampling log-probs of the learner's tokens; NaN on environment tokens
    calls: list[int] = field(default_factory=list)  # indices in `record.calls` trained here

    def trained_ids(self) -> list[int]:
        return [t for t, m in zip(self.completion_ids, self.env_mask, strict=True) if m]


def learner_calls(record: EpisodeRecord, player: str, model: str, train_rejected: bool = False) -> list[int]:
    """Indices of the calls whose sampled tokens are trained: the player's own generate calls on
    the learner's `model` (scratchpads included: the learner sampled them and they shaped its
    move), without errors, without look-ahead calls made for someone else, rejected replies only
    with `train_rejected`."""
    out = []
    for i, c in enumerate(record.calls):
        if c.player != player or c.op != "generate" or c.model != model or c.error or not c.completions:
            continue
        if c.meta.get("purpose") in SIDE_PURPOSES or c.tag in NOT_OWN_TAGS:
            continue
        if c.rejected and not train_rejected:
            continue
        out.append(i)
    return out


def kept(call: CallRecord) -> Completion:
    assert call.completions
    return call.completions[call.chosen if call.chosen is not None else 0]


def sampled_ids(record: EpisodeRecord, index: int) -> list[int]:
    call = record.calls[index]
    comp = kept(call)
    if comp.token_ids is None:
        raise SparringError(f"episode {record.id}: the learner's call {index} ({call.tag}) recorded no sampled "
                            "token ids; GRPO needs a learner on the hf backend (it records token_ids)")
    return list(comp.token_ids)


def learner_sequences(record: EpisodeRecord, player: str, prompt_ids: Callable[[CallRecord], list[int]], *,
                      model: str, train_rejected: bool = False, split_calls: bool = False) -> list[Sequence]:
    """The learner's sequences in `record`, in call order. `prompt_ids(call)` must return the
    token ids the backend fed the model for that call (`HFModel.prompt_ids`). `split_calls`: one
    sequence per call even where the conversation extends (each turn its own credit)."""
    out: list[Sequence] = []
    cur: Sequence | None = None
    for index in learner_calls(record, player, model, train_rejected):
        call = record.calls[index]
        comp = kept(call)
        ids = sampled_ids(record, index)
        if not ids:
            continue
        lps = list(comp.logprobs) if comp.logprobs is not None and len(comp.logprobs) == len(ids) \
            else [math.nan] * len(ids)
        prompt = list(prompt_ids(call))
        if comp.usage.prompt_tokens and len(prompt) != comp.usage.prompt_tokens:
            raise SparringError(f"episode {record.id}: call {index} was sampled after {comp.usage.prompt_tokens} "
                                f"prompt tokens but its prompt rebuilds to {len(prompt)}; the learner's chat "
                                "template or tokenizer is not the one it generated with")
        if cur is not None:
            full = cur.prompt_ids + cur.completion_ids
            if not split_calls and len(prompt) >= len(full) and prompt[: len(full)] == full:  # it extends
                env = prompt[len(full):]
                cur.completion_ids += env + ids
                cur.env_mask += [0] * len(env) + [1] * len(ids)
                cur.logprobs += [math.nan] * len(env) + lps
                cur.calls.append(index)
                continue
            out.append(cur)
        cur = Sequence(prompt_ids=prompt, completion_ids=list(ids), env_mask=[1] * len(ids), logprobs=lps,
                       calls=[index])
    if cur is not None:
        out.append(cur)
    return out


def check_sampled(record: EpisodeRecord, sequences: list[Sequence]) -> None:
    """The invariant: the `env_mask` = 1 tokens, in order, are exactly the sampled tokens of the
    calls the sequences train. Raised, never silently trained past."""
    trained = [t for s in sequences for t in s.trained_ids()]
    sampled = [t for s in sequences for i in s.calls for t in sampled_ids(record, i)]
    if trained != sampled:
        raise SparringError(f"episode {record.id}: the trained tokens ({len(trained)}) are not the learner's "
                            f"sampled tokens ({len(sampled)})")
