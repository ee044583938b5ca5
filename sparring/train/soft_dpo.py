"""Soft-preference DPO (the NYU debate work's "smoothed DPO") on transformers' public `Trainer` API.

    loss = −p·log σ(β·(Δ − λ·P)) − (1−p)·log σ(−β·Δ) + α · SFT(chosen)
    Δ = (log π(c) − log π_ref(c)) / |c| − (log π(r) − log π_ref(r)) / |r|
    P = max(0, (log π_ref(c) − log π(c)) / |c|)

with length-normalised log-probabilities and the target p read per row from the `preference`
column (a judge-derived probability that the chosen reply is better). α (`sft_weight`) adds the
NYU code's NLL term on the chosen reply; λ (`positive`) is DPO-Positive's penalty (Smaug, Pal et
al. 2024, arXiv 2402.13228): the preferred term stops being met by lowering the chosen reply, the
failure where DPO widens the margin by pushing both replies down. With p = 1 it is DPOP itself.

Why not a `DPOTrainer` subclass: TRL's DPO has no per-row soft labels, and reaching them meant
private hooks (signature columns, its collator's module path, its fused LM head, extra forward
kwargs) that change between TRL minor releases. Here everything is ours or public: our
tokenisation of TRL's conversational preference rows, our collator (`data_collator`), log-probs
from the model's logits, `remove_unused_columns=False`. The reference log-probs are computed once
before the first step with the policy as it starts (a fresh LoRA adapter is zero, so that is the
base; a continued adapter is the previous iteration; full fine-tuning: the initial weights), so
no reference copy is kept in memory.

Logged like TRL's DPO (`rewards/chosen|rejected|margins|accuracies`, `logps/*`) plus what a soft
target needs to be read: `soft/floor` (mean entropy of p, the lowest loss the soft term can
reach), `soft/loss_above_floor` and `soft/effective_beta` (β divided by the mean completion length).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from transformers import Trainer

METRIC_KEYS = ("rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies",
               "soft/floor", "soft/loss_above_floor")


def soft_preference_loss(policy_c: torch.Tensor, policy_r: torch.Tensor, ref_c: torch.Tensor, ref_r: torch.Tensor,
                         len_c: torch.Tensor, len_r: torch.Tensor, preference: torch.Tensor, beta: float,
                         sft_weight: float = 0.0, positive: float = 0.0) -> torch.Tensor:
    """Per-row loss from summed log-probs (policy and reference) and completion lengths."""
    len_c, len_r = len_c.clamp_min(1), len_r.clamp_min(1)
    delta = (policy_c - ref_c) / len_c - (policy_r - ref_r) / len_r
    penalty = positive * ((ref_c - policy_c) / len_c).clamp_min(0) if positive else 0.0
    loss = -preference * F.logsigmoid(beta * (delta - penalty)) - (1 - preference) * F.logsigmoid(-beta * delta)
    if sft_weight:
        loss = loss + sft_weight * (-policy_c / len_c)
    return loss


def target_entropy(preference: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) of the soft target p: the soft loss's minimum, reached when σ(βΔ) = p."""
    p = preference.clamp(0.0, 1.0)
    return -(torch.special.xlogy(p, p) + torch.special.xlogy(1 - p, 1 - p))  # 0·log 0 = 0: hard labels give 0


def tokenize_pair(tokenizer: Any, row: dict[str, Any]) -> dict[str, Any]:
    """Token ids of a conversational preference row, by the masks every trainer uses
    (`masks.pair_ids`): the prompt as the chat template renders it with the assistant turn opened,
    then each reply's own tokens and its end-of-turn token (what the model would generate)."""
    from sparring.train.masks import pair_ids

    out: dict[str, Any] = {"preference": float(row.get("preference", 1.0))}
    for side in ("chosen", "rejected"):
        out["prompt_ids"], out[f"{side}_ids"] = pair_ids(tokenizer, row["prompt"], row[side],
                                                         tokenizer.chat_template)
    return out


@dataclass
class SoftPreferenceCollator:
    """Pads a batch as [chosen rows; rejected rows] with a mask over the completion tokens."""

    pad_token_id: int

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        seqs = [(e["prompt_ids"], e[f"{side}_ids"]) for side in ("chosen", "rejected") for e in examples]
        width = max(len(p) + len(c) for p, c in seqs)
        ids = torch.full((len(seqs), width), self.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(seqs), width), dtype=torch.long)
        completion = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, (p, c) in enumerate(seqs):
            ids[i, : len(p) + len(c)] = torch.tensor(list(p) + list(c), dtype=torch.long)
            attention[i, : len(p) + len(c)] = 1
            completion[i, len(p): len(p) + len(c)] = 1
        batch = {"input_ids": ids, "attention_mask": attention, "completion_mask": completion,
                 "preference": torch.tensor([float(e["preference"]) for e in examples])}
        if "ref_chosen_logps" in examples[0]:
            batch["ref_logps"] = torch.tensor([float(e[f"ref_{side}_logps"]) for side in ("chosen", "rejected")
                                               for e in examples])
        return batch


def completion_logps(model: Any, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """(summed log-prob of each row's completion tokens, number of completion tokens), from logits."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], use_cache=False).logits
    targets = batch["input_ids"][:, 1:]
    mask = batch["completion_mask"][:, 1:].float()
    per_token = -F.cross_entropy(logits[:, :-1].float().transpose(1, 2), targets, reduction="none")
    return (per_token * mask).sum(dim=1), mask.sum(dim=1)


class SoftPreferenceDPOTrainer(Trainer):
    """`Trainer` with the soft-preference loss. `train_dataset`: rows with `prompt`, `chosen`,
    `rejected` (conversational) and `preference`; the args need `remove_unused_columns=False`."""

    # compute_loss returns a per-batch mean: the Trainer must divide it by the accumulation steps
    loss_is_scaled_for_ga = False

    def __init__(self, *args: Any, beta: float = 0.1, sft_weight: float = 0.0, positive: float = 0.0, **kwargs: Any):
        config = kwargs.get("args")
        tokenizer = kwargs.get("processing_class")
        if config is None or config.remove_unused_columns or tokenizer is None:
            raise ValueError("SoftPreferenceDPOTrainer needs args with remove_unused_columns=False and a "
                             "processing_class (the tokenizer)")
        rows = kwargs.pop("train_dataset")
        dataset = rows.map(lambda r: tokenize_pair(tokenizer, r), remove_columns=rows.column_names)
        kwargs.setdefault("data_collator", SoftPreferenceCollator(pad_token_id=tokenizer.pad_token_id))
        self.beta, self.sft_weight, self.positive = beta, sft_weight, positive
        self.preference_metrics: dict[str, list[float]] = defaultdict(list)
        kwargs["train_dataset"] = dataset
        super().__init__(*args, **kwargs)
        self.model_accepts_loss_kwargs = False  # same rule for transformers releases before 5
        self.train_dataset = self.with_reference_logps(dataset)

    @torch.no_grad()
    def with_reference_logps(self, dataset: Any) -> Any:
        """Add `ref_chosen_logps` / `ref_rejected_logps`: the starting policy's log-probs."""
        model: Any = self.model
        was_training = model.training
        model.eval()
        chosen: list[float] = []
        rejected: list[float] = []
        size = self.args.per_device_train_batch_size
        for start in range(0, len(dataset), size):
            batch = self.data_collator([dataset[i] for i in range(start, min(start + size, len(dataset)))])
            batch = {k: v.to(self.args.device) for k, v in batch.items()}
            logps, _ = completion_logps(model, batch)
            c, r = logps.chunk(2)
            chosen += c.tolist()
            rejected += r.tolist()
        model.train(was_training)
        return dataset.add_column("ref_chosen_logps", chosen).add_column("ref_rejected_logps", rejected)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        logps, lengths = completion_logps(model, inputs)
        policy_c, policy_r = logps.chunk(2)
        len_c, len_r = lengths.chunk(2)
        ref_c, ref_r = inputs["ref_logps"].to(logps.dtype).chunk(2)
        pref = inputs["preference"].to(logps.dtype)
        rows = soft_preference_loss(policy_c, policy_r, ref_c, ref_r, len_c, len_r, pref, self.beta, self.sft_weight,
                                    self.positive)
        self.record_metrics(policy_c.detach(), policy_r.detach(), ref_c, ref_r, len_c, len_r, pref, rows.detach())
        loss = rows.mean()
        return (loss, {"logps": logps}) if return_outputs else loss

    def record_metrics(self, policy_c, policy_r, ref_c, ref_r, len_c, len_r, pref, rows) -> None:
        """TRL's DPO metrics (rewards = β x summed log-ratio) plus the soft target's floor."""
        chosen, rejected = self.beta * (policy_c - ref_c), self.beta * (policy_r - ref_r)
        floor = target_entropy(pref)
        soft = soft_preference_loss(policy_c, policy_r, ref_c, ref_r, len_c, len_r, pref, self.beta)
        values = {"rewards/chosen": chosen.mean(), "rewards/rejected": rejected.mean(),
                  "rewards/margins": (chosen - rejected).mean(),
                  "rewards/accuracies": (chosen > rejected).float().mean(),
                  "logps/chosen": policy_c.mean(), "logps/rejected": policy_r.mean(),
                  "soft/floor": floor.mean(), "soft/loss_above_floor": (soft - floor).mean(),
                  "soft/effective_beta": self.beta / torch.cat([len_c, len_r]).clamp_min(1).mean()}
        for key, value in values.items():
            self.preference_metrics[key].append(float(value))

    def log(self, logs: dict[str, float], *args: Any, **kwargs: Any) -> None:
        """Add the preference metrics averaged since the last log (as TRL's trainers do)."""
        if self.preference_metrics and "loss" in logs:
            logs = {**logs, **{k: sum(v) / len(v) for k, v in self.preference_metrics.items()}}
            self.preference_metrics.clear()
        super().log(logs, *args, **kwargs)
