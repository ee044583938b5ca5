"""PPO's training data from played episodes, and the one forward pass every PPO quantity comes from.

An episode's learner sequences (`grpo/sequence.py`: exactly the tokens the learner sampled, in the
context it sampled them) hold its turns as the runs of `env_mask` = 1, one run per call, in order.
Each turn t gets a value V_t (the value head at the token just before the turn's first sampled
token: the state it answers), a reward r_t (`credit.turn_rewards`, minus the KL penalty), an
advantage A_t and a return R_t (`credit.gae`); every token the turn sampled carries A_t.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F


@dataclass
class Item:
    """One training sequence of one episode."""

    episode: int
    ids: list[int]                  # prompt + completion token ids
    positions: list[int]            # positions (in ids) of the learner's sampled tokens
    token_turn: list[int]           # the episode turn of each sampled token
    starts: list[int]               # per turn of this sequence: the position whose hidden state gives V
    turns: list[int]                # the episode turns this sequence holds, in order
    # filled before the optimisation
    old_logprobs: list[float] = field(default_factory=list)
    ref_logprobs: list[float] = field(default_factory=list)
    old_values: list[float] = field(default_factory=list)


def items_of(episode: int, sequences: list[Any]) -> list[Item]:
    """The training items of one episode's learner sequences; turns are numbered across them."""
    out: list[Item] = []
    turn = 0
    for seq in sequences:
        ids = list(seq.prompt_ids) + list(seq.completion_ids)
        offset = len(seq.prompt_ids)
        positions, token_turn, starts, turns = [], [], [], []
        previous = 0
        for j, m in enumerate(seq.env_mask):
            if m:
                if not previous:  # a run starts: a new turn
                    starts.append(offset + j - 1)
                    turns.append(turn)
                    turn += 1
                positions.append(offset + j)
                token_turn.append(turns[-1])
            previous = m
        if len(turns) != len(seq.calls):
            raise ValueError(f"a sequence of {len(seq.calls)} call(s) has {len(turns)} runs of sampled tokens")
        if positions:
            out.append(Item(episode=episode, ids=ids, positions=positions, token_turn=token_turn, starts=starts,
                            turns=turns))
    return out


def forward(model: Any, head: Any, items: list[Item], temperature: float, pad_id: int,
            with_entropy: bool = False) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """Per item: the sampled tokens' log-probabilities (at the sampling temperature), the values
    at its turn starts, and (with_entropy) the entropy of the policy at each sampled token. One
    pass of the decoder; the output layer only at the positions that need it."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    device = next(model.parameters()).device
    width = max(len(it.ids) for it in items)
    ids = torch.full((len(items), width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((len(items), width), dtype=torch.long, device=device)
    for b, it in enumerate(items):
        ids[b, : len(it.ids)] = torch.tensor(it.ids, device=device)
        mask[b, : len(it.ids)] = 1
    hidden = base.get_decoder()(input_ids=ids, attention_mask=mask).last_hidden_state
    lm_head = base.get_output_embeddings()
    logprobs, values, entropies = [], [], []
    for b, it in enumerate(items):
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
