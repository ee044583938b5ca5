"""The one forward pass every trainer quantity comes from: each item's sampled tokens'
log-probabilities (at the sampling temperature), entropies, and the values at its turn starts.

Why a shared prefix: the sequences of one step often start alike — a GRPO group's games of one
instance open with the same prompt (hundreds of tokens: the rules, the scenario) and differ only
in a dozen sampled tokens; every game of a run shares the system prompt. Padding them into one
batch runs that prompt once per row. Here the longest prefix common to all items of a batch runs
once, its keys and values are broadcast to every row (the gradient flows back through them, so
the loss and its gradient are the ones of separate rows), and only the rows' own suffixes run
per row. The output layer runs only at the positions that need it.

Why no attention mask: every row is right-padded, and in a causal model a position attends only to
the positions before it, so no real token ever sees a pad (the pads' own outputs are never read).
Without a mask PyTorch's SDPA takes its fused causal kernel (`is_causal`), which neither builds a
[rows, 1, T, T] mask nor keeps the T x T scores for the backward; with one it falls back to the
kernel that does. Same outputs at every real position (a test compares them with the masked pass).
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
import torch.nn.functional as F

from sparring.train.online.trainer.items import Item
from sparring.train.step_cost import StepCost

MIN_SHARED = 8  # a shorter common prefix is not worth a second decoder call


def common_prefix(items: list[Item]) -> int:
    """Length of the longest token prefix every item shares."""
    first = items[0].ids
    n = min(len(it.ids) for it in items)
    for it in items[1:]:
        ids = it.ids
        k = 0
        while k < n and ids[k] == first[k]:
            k += 1
        n = k
        if n == 0:
            break
    return n


def shared_length(lengths: list[int], common: int, share_prefix: bool = True) -> int:
    """How many leading tokens `hidden_states` runs once for rows of these lengths that share
    `common` tokens: every row keeps at least one token of its own, and a prefix under MIN_SHARED
    is not worth the second decoder call (0: every row padded in full)."""
    shared = min(common, min(lengths) - 1) if share_prefix and len(lengths) > 1 else 0
    return shared if shared >= MIN_SHARED else 0


def batch_cost(lengths: list[int], common: int) -> int:
    """Positions `hidden_states` computes for rows of these lengths sharing `common` tokens: the
    shared prefix once, each row's rest padded to the longest."""
    shared = shared_length(lengths, common)
    return shared + len(lengths) * (max(lengths) - shared)


def _cache_kwarg(decoder: Any) -> str:
    """The keyword the decoder takes its key/value cache by (`cache` in current transformers 5.x,
    `past_key_values` in the 5.0 releases)."""
    params = inspect.signature(decoder.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def hidden_states(model: Any, items: list[Item], pad_id: int, share_prefix: bool = True,
                  cost: StepCost | None = None, kind: str = "training") -> torch.Tensor:
    """The decoder's last hidden states, [items, longest, hidden], right-padded."""
    from transformers import DynamicCache

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = base.get_decoder()
    device = next(model.parameters()).device
    n, width = len(items), max(len(it.ids) for it in items)
    real = sum(len(it.ids) for it in items)
    shared = shared_length([len(it.ids) for it in items], common_prefix(items) if share_prefix else 0)
    if not shared:
        ids = torch.full((n, width), pad_id, dtype=torch.long, device=device)
        for b, it in enumerate(items):
            ids[b, : len(it.ids)] = torch.tensor(it.ids, device=device)
        if cost is not None:
            cost.count(kind, real, n * width)
        return decoder(input_ids=ids).last_hidden_state  # right-padded: causal attention needs no mask
    prefix = torch.tensor([items[0].ids[:shared]], device=device)
    head = decoder(input_ids=prefix, use_cache=True)
    rows = DynamicCache()
    states = head.cache if "cache" in head else head.past_key_values  # `cache` from transformers 5.x
    for layer, state in enumerate(states.layers):
        rows.update(state.keys.expand(n, -1, -1, -1), state.values.expand(n, -1, -1, -1), layer)
    rest = width - shared
    ids = torch.full((n, rest), pad_id, dtype=torch.long, device=device)
    for b, it in enumerate(items):
        ids[b, : len(it.ids) - shared] = torch.tensor(it.ids[shared:], device=device)
    positions = torch.arange(shared, width, device=device).unsqueeze(0).expand(n, -1)
    # each row's tail follows the shared prefix and is right-padded: causal attention needs no mask
    tail = decoder(input_ids=ids, position_ids=positions, use_cache=True,
                   **{_cache_kwarg(decoder): rows}).last_hidden_state
    if cost is not None:
        cost.count(kind, shared + real - n * shared, shared + n * rest)
    return torch.cat([head.last_hidden_state.expand(n, -1, -1), tail], dim=1)


def forward(model: Any, head: Any, items: list[Item], temperature: float, pad_id: int,
            with_entropy: bool = False, with_logprobs: bool = True, share_prefix: bool = True,
            cost: StepCost | None = None, kind: str = "training",
            ) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Per item: the sampled tokens' log-probabilities (at `temperature`), the values at its turn
    starts (zeros without a value `head`), and (with_entropy) the policy's entropy at each sampled
    token. `with_logprobs=False` skips the output layer (a values-only pass)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    device = next(model.parameters()).device
    hidden = hidden_states(model, items, pad_id, share_prefix, cost, kind)
    lm_head = base.get_output_embeddings()
    logprobs, values, entropies = [], [], []
    for b, it in enumerate(items):
        if with_logprobs:
            before = torch.tensor([p - 1 for p in it.positions], device=device)
            logits = lm_head(hidden[b, before]).float() / max(temperature, 1e-6)
            log_p = F.log_softmax(logits, dim=-1)
            targets = torch.tensor([it.ids[p] for p in it.positions], device=device)
            logprobs.append(log_p.gather(-1, targets[:, None]).squeeze(-1))
            if with_entropy:
                entropies.append(-(log_p.exp() * log_p).sum(-1))
        values.append(head(hidden[b, torch.tensor(it.starts, device=device)]).float()
                      if head is not None else torch.zeros(len(it.starts), device=device))
    return logprobs, values, entropies
