"""SFT, DPO (any TRL loss type, or the soft-preference loss) and KTO on rows from the exporters.

Each function takes rows (or a JSONL/Parquet file of them), trains a LoRA adapter by default and
saves it to `out` (only the adapter and the tokenizer: the `hf` backend loads it on its base
model). CPU works: fp32, no bf16; a CUDA GPU trains in bf16 (QLoRA with `quantization: 4bit`).
Rows longer than `max_length` tokens are dropped (never cut: a cut reply teaches the model to
stop mid-sentence), and the number dropped is reported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.train.config import TrainSettings
from sparring.train.policy import load_policy, lora_config, save_adapter, use_cuda

Rows = list[dict[str, Any]]


@dataclass
class TrainResult:
    adapter: Path
    rows: int
    dropped: int
    steps: int
    loss: float | None


def read_rows(source: str | Path | Rows) -> Rows:
    if isinstance(source, list):
        return source
    path = Path(source)
    if path.is_dir():
        path = next((p for p in (path / "train.jsonl", path / "train.parquet") if p.is_file()), path / "train.jsonl")
    if not path.is_file():
        raise SparringError(f"no training rows at {path} (export them with `sparring export`)")
    if path.suffix == ".parquet":
        import datasets

        return list(datasets.Dataset.from_parquet(str(path)))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _common(settings: TrainSettings, out: Path) -> dict[str, Any]:
    cuda = use_cuda()
    return {"output_dir": str(out / "trainer"), "per_device_train_batch_size": settings.batch_size,
            "gradient_accumulation_steps": settings.gradient_accumulation, "learning_rate": settings.learning_rate,
            "num_train_epochs": settings.epochs, "max_steps": settings.max_steps,
            "logging_steps": settings.logging_steps, "save_strategy": "no", "report_to": [],
            "seed": settings.seed, "bf16": cuda, "use_cpu": not cuda,
            "gradient_checkpointing": settings.gradient_checkpointing, "max_length": settings.max_length,
            "disable_tqdm": False}


def _length(tokenizer: Any, messages: list[dict[str, str]]) -> int:
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _fit(rows: Rows, tokenizer: Any, max_length: int, parts: tuple[str, ...]) -> tuple[Rows, int]:
    kept = [r for r in rows if max(_length(tokenizer, r["prompt"] + r[p]) if p != "messages" else
                                   _length(tokenizer, r["messages"]) for p in parts) <= max_length]
    return kept, len(rows) - len(kept)


def _dataset(rows: Rows, columns: tuple[str, ...]):
    import datasets

    return datasets.Dataset.from_list([{c: r[c] for c in columns if c in r} for r in rows])


def _finish(trainer: Any, model: Any, tokenizer: Any, out: Path, rows: int, dropped: int) -> TrainResult:
    result = trainer.train()
    adapter = save_adapter(trainer.model if hasattr(trainer, "model") else model, tokenizer, out)
    (out / "train_summary.json").write_text(json.dumps({
        "rows": rows, "dropped_too_long": dropped, "steps": result.global_step,
        "train_loss": result.training_loss}, indent=2), encoding="utf-8")
    return TrainResult(adapter=adapter, rows=rows, dropped=dropped, steps=result.global_step,
                       loss=result.training_loss)


def train_sft(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """Supervised fine-tuning on the assistant turns of `messages` rows, or on the completions of
    conversational `prompt`/`completion` rows."""
    from trl import SFTConfig, SFTTrainer

    from sparring.train.chat_templates import apply_generation_markers

    out = Path(out)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    if settings.assistant_only_loss:
        apply_generation_markers(tokenizer)
    rows = read_rows(source)
    # `messages` rows train every assistant turn (assistant-only loss); prompt/completion rows (the
    # exporter's format when earlier turns are context) train the completion only
    columns = ("messages",) if not rows or "messages" in rows[0] else ("prompt", "completion")
    rows, dropped = _fit(rows, tokenizer, settings.max_length, ("messages",) if columns == ("messages",)
                         else ("completion",))
    if not rows:
        raise SparringError(f"no SFT rows fit max_length={settings.max_length} tokens ({dropped} too long)")
    config = SFTConfig(**_common(settings, out), assistant_only_loss=settings.assistant_only_loss
                       and columns == ("messages",))
    trainer = SFTTrainer(model=model, args=config, train_dataset=_dataset(rows, columns),
                         processing_class=tokenizer, peft_config=lora_config(settings), callbacks=callbacks)
    return _finish(trainer, model, tokenizer, out, len(rows), dropped)


def train_dpo(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """DPO on preference rows. With `settings.adapter`, that adapter is trained further and its
    weights before this run are the reference (the previous iteration's policy)."""
    from trl import DPOConfig, DPOTrainer

    from sparring.train.soft_dpo import SoftPreferenceDPOTrainer

    out = Path(out)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    rows, dropped = _fit(read_rows(source), tokenizer, settings.max_length, ("chosen", "rejected"))
    if not rows:
        raise SparringError(f"no DPO pairs fit max_length={settings.max_length} tokens ({dropped} too long)")
    d = settings.dpo
    config = DPOConfig(**_common(settings, out), beta=d.beta, loss_type=d.loss_type,
                       precompute_ref_log_probs=d.soft)
    columns = ("prompt", "chosen", "rejected", "preference")
    kwargs = {"model": model, "args": config, "train_dataset": _dataset(rows, columns),
              "processing_class": tokenizer, "peft_config": lora_config(settings), "callbacks": callbacks}
    trainer = SoftPreferenceDPOTrainer(**kwargs, sft_weight=d.sft_weight) if d.soft else DPOTrainer(**kwargs)
    return _finish(trainer, model, tokenizer, out, len(rows), dropped)


def train_kto(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """KTO on rows labelled desirable / undesirable."""
    from trl import KTOConfig, KTOTrainer

    out = Path(out)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    rows, dropped = _fit(read_rows(source), tokenizer, settings.max_length, ("completion",))
    if not rows or len({bool(r["label"]) for r in rows}) < 2:
        raise SparringError("KTO needs rows labelled both desirable and undesirable that fit max_length")
    k = settings.kto
    config = KTOConfig(**_common(settings, out), beta=k.beta, desirable_weight=k.desirable_weight,
                       undesirable_weight=k.undesirable_weight)
    trainer = KTOTrainer(model=model, args=config, train_dataset=_dataset(rows, ("prompt", "completion", "label")),
                         processing_class=tokenizer, peft_config=lora_config(settings), callbacks=callbacks)
    return _finish(trainer, model, tokenizer, out, len(rows), dropped)


TRAINERS = {"sft": train_sft, "dpo": train_dpo, "kto": train_kto}


def train(source: str | Path | Rows, settings: TrainSettings, out: str | Path) -> TrainResult:
    return TRAINERS[settings.method](source, settings, out)
