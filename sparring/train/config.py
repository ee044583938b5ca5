"""Strict schemas of training settings (`configs/train/*.yaml` and the loops' `train:` blocks)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sparring.types import Strict


class LoraSettings(Strict):
    """PEFT LoRA: the default (set `lora: null` for full fine-tuning)."""

    r: int = Field(8, ge=1)
    alpha: int = Field(16, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    bias: Literal["none", "all", "lora_only"] = Field("none", description="which biases train (PEFT `bias`)")
    modules_to_save: list[str] | None = Field(
        None, description="modules trained in full and saved with the adapter (e.g. [lm_head, embed_tokens] "
                          "after adding tokens)")


# TRL's DPO loss types (`DPOConfig.loss_type` of trl 1.x; trl 0.29 has all but sigmoid_norm): TRL itself
# rejects an unknown one only inside its first loss computation, after the model, the reference and
# the data are loaded; a test checks the installed TRL still documents each
DPO_LOSS_TYPES = ("sigmoid", "hinge", "ipo", "exo_pair", "nca_pair", "robust", "bco_pair", "sppo_hard", "aot",
                  "aot_unpaired", "apo_zero", "apo_down", "discopop", "sft", "sigmoid_norm")


class DPOSettings(Strict):
    loss_type: list[str] = Field(default_factory=lambda: ["sigmoid"],
                                 description="TRL DPO loss types (sigmoid, hinge, ipo, robust, apo_zero, sft, ...); "
                                             "several are summed, weighted by loss_weights (RPO: [sigmoid, sft])")
    loss_weights: list[float] | None = Field(
        None, description="one weight per loss_type (TRL's `loss_weights`; default 1.0 each)")
    beta: float = Field(0.1, gt=0.0)
    soft: bool = Field(False, description="soft-preference loss with the rows' `preference` targets (NYU smoothed DPO)")
    sft_weight: float = Field(0.0, ge=0.0, description="soft loss: alpha x the SFT loss on the chosen reply")
    positive: float = Field(0.0, ge=0.0, description="soft loss: DPO-Positive's lambda (Smaug), a penalty on the "
                            "chosen reply's per-token log-prob falling below the reference")

    @field_validator("loss_type")
    @classmethod
    def _known_losses(cls, value: list[str]) -> list[str]:
        unknown = [name for name in value if name not in DPO_LOSS_TYPES]
        if unknown:
            raise ValueError(f"unknown DPO loss type(s) {unknown}: choose from {', '.join(DPO_LOSS_TYPES)}")
        if not value:
            raise ValueError("loss_type is empty: name at least one loss (e.g. [sigmoid])")
        return value

    @model_validator(mode="after")
    def _one_loss(self) -> DPOSettings:
        if self.loss_weights is not None and len(self.loss_weights) != len(self.loss_type):
            raise ValueError(f"loss_weights has {len(self.loss_weights)} weight(s) for {len(self.loss_type)} loss "
                             f"type(s) {self.loss_type}: give one weight per loss type, in the same order")
        # soft: true replaces TRL's losses entirely; a loss_type beside it would be silently ignored
        if self.soft and "loss_type" in self.model_fields_set:
            raise ValueError(
                f"loss_type {self.loss_type} cannot be combined with soft: true — the soft-preference loss runs "
                "(-p·log σ(βΔ) - (1-p)·log σ(-βΔ) on length-normalised log-ratios, + sft_weight x SFT) and "
                "TRL's loss types are not used; remove loss_type, or set soft: false to train with TRL's loss types")
        if self.soft and self.loss_weights is not None:
            raise ValueError("loss_weights weigh TRL's loss types; the soft-preference loss (soft: true) has one loss "
                             "and weighs its SFT term with sft_weight")
        if not self.soft and self.positive:
            raise ValueError("positive (DPO-Positive's lambda) is a term of the soft-preference loss: set soft: true "
                             "(with preference 1.0 rows it is DPOP itself)")
        if not self.soft and self.sft_weight:
            raise ValueError("sft_weight is a term of the soft-preference loss (soft: true); with TRL's loss types "
                             "add 'sft' to loss_type instead")
        return self


class KTOSettings(Strict):
    beta: float = Field(0.1, gt=0.0)
    desirable_weight: float = Field(1.0, gt=0.0)
    undesirable_weight: float = Field(1.0, gt=0.0)


class TuningSettings(Strict):
    """What researchers tune in every trainer (SFT, DPO, KTO, GRPO): optimizer, schedule, clipping,
    trackers, and the escape hatch to the installed TRL config (`arguments.py` resolves them)."""

    optim: str = Field("adamw_torch", description="optimizer (transformers' `optim`: adamw_torch, "
                       "adamw_torch_fused, paged_adamw_8bit, adamw_bnb_8bit, adafactor, sgd, ...)")
    weight_decay: float = Field(0.0, ge=0.0)
    lr_scheduler_type: str = Field("linear", description="linear, cosine, constant, constant_with_warmup, ...")
    warmup_steps: float = Field(0, ge=0, description="warm-up: optimizer steps, or a fraction of the run if < 1")
    max_grad_norm: float = Field(1.0, ge=0.0, description="gradient clipping (0: none)")
    report_to: list[str] = Field(default_factory=list, description="experiment trackers: tensorboard, wandb, "
                                 "trackio, mlflow, ... (any transformers supports and is installed; none by default)")
    run_name: str | None = Field(None, description="the tracker's run name (default: the output directory's name)")
    trainer_args: dict[str, Any] = Field(
        default_factory=dict, description="any other field of the installed TRL config (SFTConfig, DPOConfig, "
                                          "KTOConfig, GRPOConfig), passed as it is; an unknown field is an error")

    @field_validator("report_to", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        """`report_to: tensorboard` and `report_to: none` read as transformers reads them."""
        if value is None or value == "none":
            return []
        return [value] if isinstance(value, str) else value


class TrainSettings(TuningSettings):
    """One training run. `model`: a model name from the models registry (an `hf` spec, e.g. the
    bundled `smollm2-135m`) or a model directory. `adapter`: continue training this LoRA adapter
    (its previous weights are also the DPO reference)."""

    method: Literal["sft", "dpo", "kto"] = "sft"
    model: str = "smollm2-135m"
    models_file: str | None = Field(None, description="a models file `model` is looked up in (with the shipped "
                                    "one; default $SPARRING_MODELS); a loop passes its own")
    adapter: str | None = None
    lora: LoraSettings | None = Field(default_factory=LoraSettings)
    quantization: Literal["4bit", "8bit"] | None = Field(
        None, description="base weights in 4 bits (QLoRA, NF4) or 8 bits through bitsandbytes (CUDA only)")
    learning_rate: float = Field(2e-4, gt=0.0, description="LoRA default, measured: held-out loss fell 4x more "
                                 "in 4 steps than at 5e-5 (benchmarks/bench_lora_defaults.py)")
    epochs: float = Field(1.0, gt=0.0)
    max_steps: int = Field(-1, description="stop after this many optimizer steps (-1: by epochs)")
    batch_size: int = Field(2, ge=1, description="per device")
    gradient_accumulation: int = Field(1, ge=1)
    max_length: int = Field(1024, ge=16, description="tokens per row; longer rows are dropped, not cut")
    assistant_only_loss: bool = True
    padding_free: bool = Field(False, description="SFT: a batch's rows run as one sequence without padding (TRL's "
                               "padding_free; the attention keeps each row to itself through its position ids; rows "
                               "are already cut to max_length). TRL 1.x has no padding-free DPO or KTO")
    gradient_checkpointing: bool | None = Field(
        None, description="recompute activations in the backward pass (less memory, more time); default: on "
                          "for DPO/KTO (pairs: 13.5 -> 8 GB peak measured), off for SFT (25% faster steps, "
                          "2.9 -> 4.5 GB peak measured; benchmarks/bench_lora_defaults.py)")
    seed: int = 0
    logging_steps: int = Field(1, ge=1)
    save_steps: int = Field(25, ge=0, description="checkpoint every N optimizer steps into OUT/trainer (0: only "
                                                  "when --max-minutes stops the run); a rerun resumes from the last")
    save_total_limit: int = Field(2, ge=1, description="checkpoints kept (the oldest are deleted)")
    max_minutes: float | None = Field(None, gt=0.0, description="stop after this many minutes of training, "
                                                                "saving a checkpoint to resume from")
    dpo: DPOSettings = Field(default_factory=DPOSettings)
    kto: KTOSettings = Field(default_factory=KTOSettings)
