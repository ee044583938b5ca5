"""The trainer's loss on one batch, from the policy's forward: per sampled token, PPO-clip's policy
term with the token's turn advantage (on-policy the ratio is 1), minus `ent_coef` x entropy; PPO's
clipped value loss at each turn's state x `vf_coef`; GRPO's KL to the reference (k3) x `beta`.
Sums, not means: the caller divides by the step's (GRPO) or the minibatch's (PPO) trained tokens."""

from __future__ import annotations

from typing import Any

from sparring.train.online.ppo.config import PPOSettings
from sparring.train.online.trainer.advantages import Credit
from sparring.train.online.trainer.items import Item


def token_losses(batch: list[Item], logprobs: list[Any], values: list[Any], entropies: list[Any], credit: Credit,
                 ppo: PPOSettings, kl_coef: float = 0.0, with_kl: bool = False) -> tuple[Any, dict[str, Any]]:
    """The summed token losses of `batch` and their parts (detached sums and counts for the logs).
    `values` are the value head's per-turn outputs (empty tensors without a head); `with_kl` adds
    GRPO's k3 term against each item's `ref_logprobs`."""
    import torch

    pg, vf, ent, clipped, approx, kl = [], [], [], [], [], []
    for it, lp, v, en in zip(batch, logprobs, values, entropies, strict=True):
        old = torch.tensor(it.old_logprobs, device=lp.device)
        a = torch.tensor([credit.adv[it.key][t] for t in it.token_turn], device=lp.device)
        ratio = torch.exp(lp - old)
        pg.append(torch.max(-a * ratio, -a * ratio.clamp(1 - ppo.cliprange, 1 + ppo.cliprange)))
        clipped.append(((ratio - 1).abs() > ppo.cliprange).float())
        approx.append(0.5 * (lp - old) ** 2)
        ent.append(en)
        if credit.ret:
            old_v = torch.tensor(it.old_values, device=v.device)
            target = torch.tensor([credit.ret[it.key][t] for t in it.turns], device=v.device)
            v_clip = old_v + (v - old_v).clamp(-ppo.cliprange_value, ppo.cliprange_value)
            vf.append(0.5 * torch.max((v - target) ** 2, (v_clip - target) ** 2))
        if with_kl:
            d = torch.tensor(it.ref_logprobs, device=lp.device) - lp
            kl.append(torch.exp(d) - d - 1)
    tokens = torch.cat(pg)
    loss = tokens.sum() - ppo.ent_coef * torch.cat(ent).sum()
    parts: dict[str, Any] = {"pg": tokens.detach().sum(), "entropy": torch.cat(ent).detach().sum(),
                             "clipped": torch.cat(clipped).sum(), "approx_kl": torch.cat(approx).detach().sum(),
                             "tokens": len(tokens)}
    if vf:
        value = torch.cat(vf)
        parts["vf"], parts["vf_n"] = value.detach().sum(), len(value)
        loss = loss + ppo.vf_coef * value.sum() * (len(tokens) / len(value))
    if kl:
        k3 = torch.cat(kl)
        loss = loss + kl_coef * k3.sum()
        parts["kl_loss"] = k3.detach().sum()
    return loss, parts
