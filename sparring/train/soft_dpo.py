"""Soft-preference DPO (the NYU debate work's "smoothed DPO") as a small `DPOTrainer` subclass.

    loss = −p·log σ(β·Δ) − (1−p)·log σ(−β·Δ) + α · SFT(chosen)
    Δ = (log π(c) − log π_ref(c)) / |c| − (log π(r) − log π_ref(r)) / |r|

with length-normalised log-probabilities and the target p read per row from the `preference`
column (a judge-derived probability that the chosen reply is better). Reference log-probs are
precomputed by TRL (`precompute_ref_log_probs`); the policy forward is TRL's own, so a step costs
what a plain DPO step costs (benchmarks/bench_train.py). Works at any per-device batch size.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from trl import DPOTrainer
from trl.trainer.dpo_trainer import DataCollatorForPreference


class SoftPreferenceCollator(DataCollatorForPreference):
    """TRL's preference collator, keeping each row's soft target as a `preference` tensor."""

    def torch_call(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = super().torch_call(examples)
        out["preference"] = torch.tensor([float(e.get("preference", 1.0)) for e in examples])
        return out


def soft_preference_loss(policy_c: torch.Tensor, policy_r: torch.Tensor, ref_c: torch.Tensor, ref_r: torch.Tensor,
                         len_c: torch.Tensor, len_r: torch.Tensor, preference: torch.Tensor, beta: float,
                         sft_weight: float = 0.0) -> torch.Tensor:
    """Per-row loss from summed log-probs (policy and reference) and completion lengths."""
    len_c, len_r = len_c.clamp_min(1), len_r.clamp_min(1)
    delta = (policy_c - ref_c) / len_c - (policy_r - ref_r) / len_r
    loss = -preference * F.logsigmoid(beta * delta) - (1 - preference) * F.logsigmoid(-beta * delta)
    if sft_weight:
        loss = loss + sft_weight * (-policy_c / len_c)
    return loss


class SoftPreferenceDPOTrainer(DPOTrainer):
    """`DPOTrainer` with the soft-preference loss; needs `precompute_ref_log_probs=True`."""

    def __init__(self, *args: Any, sft_weight: float = 0.0, **kwargs: Any):
        config = kwargs.get("args")
        if config is None or not config.precompute_ref_log_probs:
            raise ValueError("SoftPreferenceDPOTrainer needs DPOConfig(precompute_ref_log_probs=True)")
        tokenizer = kwargs.get("processing_class")
        if kwargs.get("data_collator") is None and tokenizer is not None:
            kwargs["data_collator"] = SoftPreferenceCollator(pad_token_id=tokenizer.pad_token_id,
                                                             max_length=config.max_length)
        self.sft_weight = sft_weight
        super().__init__(*args, **kwargs)

    def _set_signature_columns_if_needed(self) -> None:
        super()._set_signature_columns_if_needed()
        if self._signature_columns is not None and "preference" not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, "preference"]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        completion_mask = inputs["completion_mask"]
        shift_mask = completion_mask[..., 1:]
        labels = inputs["input_ids"].masked_fill(completion_mask == 0, -100)
        outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], labels=labels,
                        use_cache=False, fused_lm_head=True)
        per_token = outputs.log_probs[:, -shift_mask.size(1):]
        logps = (per_token * shift_mask).sum(dim=1)
        lengths = shift_mask.sum(dim=1).to(logps.dtype)
        policy_c, policy_r = logps.chunk(2, dim=0)
        len_c, len_r = lengths.chunk(2, dim=0)
        ref_c = inputs["ref_chosen_logps"].to(logps.dtype)
        ref_r = inputs["ref_rejected_logps"].to(logps.dtype)
        pref = inputs["preference"].to(logps.dtype)
        loss = soft_preference_loss(policy_c, policy_r, ref_c, ref_r, len_c, len_r, pref, self.beta,
                                    self.sft_weight).mean()
        return (loss, outputs) if return_outputs else loss
