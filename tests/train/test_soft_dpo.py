"""The soft-preference DPO trainer on a tiny model: its metrics (what TRL's DPO logs plus the
soft-target floor), its reference (the starting policy), its collator, gradient accumulation, and
the config rule that `loss_type` cannot be combined with the soft loss."""

from __future__ import annotations

import math

import pytest
import torch

from sparring.train.soft_dpo import SoftPreferenceCollator, target_entropy, tokenize_pair

PROMPT = [{"role": "system", "content": "Argue."}, {"role": "user", "content": "Which answer?"}]


def _rows(n: int = 4, preference: float = 0.8) -> list[dict]:
    return [{"prompt": PROMPT, "chosen": [{"role": "assistant", "content": f"Answer A, reason {i}."}],
             "rejected": [{"role": "assistant", "content": "B"}], "preference": preference} for i in range(n)]


def test_loss_type_with_the_soft_loss_is_rejected_naming_the_loss_that_runs():
    from pydantic import ValidationError

    from sparring.train.config import TrainSettings

    with pytest.raises(ValidationError, match="cannot be combined with soft: true — the soft-preference loss runs"):
        TrainSettings(method="dpo", dpo={"soft": True, "loss_type": ["ipo"]})
    with pytest.raises(ValidationError, match="sft_weight is a term of the soft-preference loss"):
        TrainSettings(method="dpo", dpo={"sft_weight": 0.5})
    assert TrainSettings(method="dpo", dpo={"soft": True}).dpo.soft
    assert TrainSettings(method="dpo", dpo={"loss_type": ["ipo"]}).dpo.loss_type == ["ipo"]


def test_the_loader_names_the_file_and_key_for_loss_type_with_soft(tmp_path):
    from sparring.config_io import load_yaml_model
    from sparring.errors import SparringError
    from sparring.train.config import TrainSettings

    path = tmp_path / "dpo.yaml"
    path.write_text("method: dpo\ndpo: {soft: true, loss_type: [hinge]}\n")
    with pytest.raises(SparringError) as info:
        load_yaml_model(TrainSettings, path)
    assert "dpo.yaml" in str(info.value) and "dpo" in str(info.value) and "soft-preference loss runs" in str(info.value)


def test_tokenize_and_collate_mark_exactly_the_reply_tokens():
    from sparring.models.tiny import tiny_tokenizer

    tok = tiny_tokenizer()
    row = tokenize_pair(tok, _rows(1)[0])
    prompt_text = tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True)
    assert tok.decode(row["prompt_ids"]) == prompt_text
    assert tok.decode(row["chosen_ids"]).startswith("Answer A, reason 0.<|im_end|>")
    batch = SoftPreferenceCollator(pad_token_id=tok.pad_token_id)(
        [row, {**row, "chosen_ids": row["chosen_ids"][:2], "preference": 0.6}])
    assert batch["input_ids"].shape[0] == 4  # [chosen x2; rejected x2]
    for i, reply in enumerate([row["chosen_ids"], row["chosen_ids"][:2], row["rejected_ids"], row["rejected_ids"]]):
        assert batch["input_ids"][i][batch["completion_mask"][i].bool()].tolist() == reply
        assert int(batch["attention_mask"][i].sum()) == len(row["prompt_ids"]) + len(reply)
    assert batch["preference"].tolist() == pytest.approx([0.8, 0.6])


def test_target_entropy_is_the_minimum_of_the_soft_loss():
    from sparring.train.soft_dpo import soft_preference_loss

    p = torch.tensor([0.7])
    deltas = torch.linspace(-20, 20, 4001)
    losses = torch.stack([soft_preference_loss(d.view(1), torch.zeros(1), torch.zeros(1), torch.zeros(1),
                                               torch.ones(1), torch.ones(1), p, beta=1.0) for d in deltas])
    assert float(losses.min()) == pytest.approx(float(target_entropy(p)), abs=1e-4)
    assert float(target_entropy(torch.tensor([1.0]))) == pytest.approx(0.0, abs=1e-6)


def _trainer(tmp_path, rows, batch_size=2, accumulation=1, max_steps=3, lr=5e-2, seed=0, optim="adamw_torch"):
    import datasets
    from peft import LoraConfig, get_peft_model
    from transformers import TrainingArguments

    from sparring.models.tiny import tiny_model
    from sparring.train.soft_dpo import SoftPreferenceDPOTrainer

    model, tok = tiny_model(seed=seed, vocab=1024)
    torch.manual_seed(seed)  # the LoRA A matrices are drawn from the global RNG
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear",
                                             task_type="CAUSAL_LM"))
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=batch_size,
                             gradient_accumulation_steps=accumulation, max_steps=max_steps, learning_rate=lr,
                             logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=seed,
                             remove_unused_columns=False, lr_scheduler_type="constant", disable_tqdm=True,
                             optim=optim, max_grad_norm=0.0)
    return SoftPreferenceDPOTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_list(rows),
                                    processing_class=tok, beta=0.5)


@pytest.mark.slow
def test_the_trainer_logs_rewards_margins_accuracies_and_the_floor(tmp_path):
    trainer = _trainer(tmp_path, _rows(4, preference=0.8), batch_size=4, lr=1e-2)
    trainer.train()
    logs = [e for e in trainer.state.log_history if "loss" in e]
    assert len(logs) == 3
    floor = -(0.8 * math.log(0.8) + 0.2 * math.log(0.2))
    for e in logs:
        assert {"rewards/chosen", "rewards/rejected", "rewards/margins", "rewards/accuracies",
                "logps/chosen", "logps/rejected", "soft/floor", "soft/effective_beta"} <= set(e)
        assert e["soft/floor"] == pytest.approx(floor, rel=1e-5)
        assert e["rewards/margins"] == pytest.approx(e["rewards/chosen"] - e["rewards/rejected"], abs=1e-5)
        assert e["loss"] >= e["soft/floor"] - 1e-4  # the soft loss never goes below the entropy of p
        assert e["soft/loss_above_floor"] == pytest.approx(e["loss"] - floor, abs=1e-3)
    # step 1 runs before any update: the policy is its own reference (a new LoRA adapter is zero)
    assert logs[0]["rewards/chosen"] == pytest.approx(0.0, abs=1e-5)
    assert logs[0]["rewards/margins"] == pytest.approx(0.0, abs=1e-5)
    assert logs[0]["loss"] == pytest.approx(math.log(2), abs=1e-4)
    # the policy moves towards the chosen replies: margin and pair accuracy rise
    assert logs[-1]["rewards/margins"] > 0 and logs[-1]["rewards/accuracies"] == 1.0


@pytest.mark.slow
def test_gradient_accumulation_gives_the_update_of_one_big_batch(tmp_path):
    """A contract with transformers' Trainer: our mean loss is divided by the accumulation steps."""
    rows = [{**r, "preference": p} for r, p in zip(_rows(4), (0.9, 0.6, 0.7, 0.8), strict=True)]

    def weights(batch_size, accumulation):
        # plain SGD: Adam's first step is ~lr x sign(gradient) and would hide a wrongly scaled loss
        trainer = _trainer(tmp_path / f"{batch_size}-{accumulation}", rows, batch_size, accumulation, max_steps=1,
                           lr=1.0, optim="sgd")
        trainer.train()
        return {k: v.detach().clone() for k, v in trainer.model.named_parameters() if v.requires_grad}

    one, accumulated = weights(4, 1), weights(2, 2)
    moved = [k for k in one if not torch.allclose(one[k], accumulated[k], atol=1e-6)]
    assert not moved, moved[:3]
