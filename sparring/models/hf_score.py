"""Teacher-forced option scoring: log P(option | prompt), summed over the option's tokens.

Tokenization boundary: prompt and prompt+option are tokenized separately and the option's tokens
are what follows their common prefix. Usually that prefix is the whole prompt. When the option's
first characters merge with the prompt's last ones into one token (e.g. prefix "Answer: " + "A"
becomes "Answer:" + " A"), the merged tokens also spell the prompt's tail. We then compute, from
the common prefix, log P(tail+option) - log P(text continues with tail) ("token healing"): the
denominator sums the probability of every vocabulary token that starts with the tail text (plus
the canonical path through the tail's own tokens when the tail spans several), so the result is
the probability of the option's characters after the prompt's characters, and stays <= 0.

All (request, option) rows — plus any prompt-tail rows that correction needs — are sorted by
length and run in batches of `max_batch_size`, one forward pass per batch. Rows are left-padded so
the scored tokens sit at the end and only those last positions' logits are materialised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sparring.errors import BackendError, ContextOverflowError
from sparring.models.hf_kv import cache_kwarg

if TYPE_CHECKING:
    from sparring.models.hf_prefix import PrefixContext


@dataclass
class Row:
    """Score the tokens `ids[start:]` given `ids[:start]`; add `sign` * that sum to `target`."""

    ids: list[int]
    start: int
    target: tuple[int, int]  # (request index, option index)
    sign: float = 1.0
    # For a boundary-correction row: per scored position, the ids of tokens that start with the
    # remaining tail text; the row's value is then log P(text continues with the tail).
    heal: list[list[int]] | None = None


class TokenHealer:
    """Finds the vocabulary tokens whose text starts with a given string (cached per string)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._texts: list[str] | None = None
        self._cache: dict[str, list[int]] = {}

    def text(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def covering(self, text: str) -> list[int]:
        if text not in self._cache:
            if self._texts is None:  # decoded once per model, only if a boundary merge ever happens
                self._texts = self.tokenizer.batch_decode([[i] for i in range(len(self.tokenizer))])
            self._cache[text] = [i for i, t in enumerate(self._texts) if t.startswith(text)]
        return self._cache[text]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):  # lengths differ; stop at the shorter
        if x != y:
            break
        n += 1
    return n


def build_rows(req_index: int, prompt_ids: list[int], option_ids: Sequence[list[int]],
               max_context: int | None, truncation: str, healer: TokenHealer) -> list[Row]:
    """Rows for one request; applies the boundary correction and the context policy."""
    rows: list[Row] = []
    for j, full in enumerate(option_ids):
        k = common_prefix(prompt_ids, full)
        if k == 0:
            raise BackendError(f"score request {req_index}: option {j} has no prompt tokens to condition on")
        drop = 0
        if max_context is not None and len(full) > max_context:
            if truncation == "error":
                raise ContextOverflowError(
                    f"score request {req_index}: prompt + option {j} is {len(full)} tokens, more than the "
                    f"model's context limit (max_context) of {max_context}; shorten the prompt or set "
                    "truncation: left")
            drop = len(full) - max_context
            if drop >= k:
                raise ContextOverflowError(
                    f"score request {req_index}: option {j} alone ({len(full) - k} tokens) does not fit "
                    f"max_context={max_context}")
        rows.append(Row(full[drop:], k - drop, (req_index, j)))
        if k < len(prompt_ids):  # boundary merge: divide by P(text continues with the prompt tail)
            tail = prompt_ids[k:]
            heal = [healer.covering(healer.text(tail[t:])) for t in range(len(tail))]
            rows.append(Row(prompt_ids[drop:], k - drop, (req_index, j), sign=-1.0, heal=heal))
    return rows


def score_rows(model, base_model, rows: Sequence[Row], pad_id: int, device, batch_size: int,
               prefix: PrefixContext | None = None, kv_layers: int | None = None) -> list[float]:
    """Sum of token log-probabilities of each row's scored span, in row order.

    With a `prefix` cache, each row's prompt comes from the cache where it can (the options of one
    request share it, and a judge's prompt often extends an earlier one), so only the rest of the
    row is run; the prompt's states are stored for the next rows.
    """
    from sparring.models.hf_prefix import pack

    order = sorted(range(len(rows)), key=lambda i: -len(rows[i].ids))
    sums = [0.0] * len(rows)
    from sparring.models.hf_prefix import supports_logits_to_keep

    keep_ok = supports_logits_to_keep(base_model)
    for pos in range(0, len(order), batch_size):
        chunk = [rows[i] for i in order[pos : pos + batch_size]]
        spans = [len(r.ids) - r.start for r in chunk]
        if max(spans) == 0:  # only empty options: log P = 0
            continue
        # the logits at position start-1 predict the first scored token: that position is run
        found = (prefix.prepare(model, [r.ids[: r.start - 1] for r in chunk], pad_id, device)
                 if prefix is not None else [(0, [])] * len(chunk))
        packed = pack([(r.ids, n, pieces) for r, (n, pieces) in zip(chunk, found, strict=True)], pad_id, device)
        p = packed.width_past
        ids = packed.input_ids
        keep = max(spans) + 1
        kwargs = {"logits_to_keep": keep} if keep_ok else {}
        cache = packed.cache(kv_layers) if prefix is not None else None
        result = model(input_ids=ids[:, p:], attention_mask=packed.attention_mask,
                       position_ids=packed.positions[:, p:], use_cache=cache is not None,
                       **{cache_kwarg(model): cache}, **kwargs)
        logits = result.logits[:, -keep:]
        logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
        token_logp = logp.gather(2, ids[:, -keep + 1:, None]).squeeze(2)
        width = token_logp.shape[1]
        for row_pos, (row, span) in enumerate(zip(chunk, spans, strict=True)):
            tokens = token_logp[row_pos, width - span:]
            if row.heal is None:
                sums[order[pos + row_pos]] = float(tokens.sum())
            else:
                dists = logp[row_pos, width - span:]
                sums[order[pos + row_pos]] = _continuation_logp(dists, tokens, row.heal)
    return sums


def _continuation_logp(dists: torch.Tensor, tokens: torch.Tensor, heal: list[list[int]]) -> float:
    """log P(text continues with the tail): at each tail position either one token covers the rest
    of the tail, or the canonical tail token is taken and the recursion goes on."""
    vocab = dists.shape[-1]
    covers = []
    for t, ids in enumerate(heal):
        ids = [i for i in ids if i < vocab]  # tokenizer may list added tokens beyond the logits
        covers.append(torch.logsumexp(dists[t, ids], dim=0) if ids else dists.new_tensor(float("-inf")))
    total = covers[-1]
    for t in range(len(heal) - 2, -1, -1):
        total = torch.logaddexp(covers[t], tokens[t] + total)
    return float(total)
