"""SFT, DPO (any TRL loss type, or the soft-preference loss) and KTO on rows from the exporters.

Each function takes rows (or a JSONL/Parquet file of them), trains a LoRA adapter by default and
saves it to `out` (only the adapter and the tokenizer: the `hf` backend loads it on its base
model). CPU works: fp32, no bf16; a CUDA GPU trains in bf16 (QLoRA with `quantization: 4bit`).
Rows longer than `max_length` tokens are dropped (never cut: a cut reply teaches the model to
stop mid-sentence), and the number dropped is reported. Checkpoints go to `out/trainer` every
`save_steps`; a rerun into the same `out` resumes from the last one, and `max_minutes` saves one
and stops (see `checkpoints.py`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.train.arguments import check_settings, checkpointing, training_args
from sparring.train.checkpoints import TimeLimit, checkpoint_step, last_checkpoint
from sparring.train.config import TrainSettings
from sparring.train.distributed import save_trained, shared_dataset
from sparring.train.policy import load_policy, lora_config, with_new_adapter

Rows = list[dict[str, Any]]


@dataclass
class TrainResult:
    adapter: Path
    rows: int
    dropped: int
    steps: int
    loss: float | None
    metrics: dict[str, float] = field(default_factory=dict)
    first_metrics: dict[str, float] = field(default_factory=dict)  # the first logged step's: where it started
    complete: bool = True  # False: the time limit stopped it; a rerun resumes from the checkpoint
    resumed_from: str | None = None


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
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                raise SparringError(f"{path}:{n}: not a JSON row ({e})") from None
    return rows


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


def last_logged(log_history: list[dict[str, Any]], which: int = -1) -> dict[str, float]:
    """The training metrics of the last logged step (loss, DPO rewards/*, soft/*, ...); `which=0`:
    of the first."""
    steps = [e for e in log_history if "loss" in e]
    return {k: float(v) for k, v in (steps[which] if steps else {}).items()
            if isinstance(v, (int, float)) and k not in ("step", "epoch")}


def _finish(trainer: Any, model: Any, tokenizer: Any, out: Path, rows: int, dropped: int,
            settings: TrainSettings, extra_metrics: dict[str, float] | None = None) -> TrainResult:
    limit = TimeLimit(settings.max_minutes)
    trainer.add_callback(limit)
    resume = last_checkpoint(out / "trainer")
    result = trainer.train(resume_from_checkpoint=resume)
    ran = result.global_step - checkpoint_step(resume)
    loss = result.training_loss if ran > 0 else None  # a rerun of a finished run trains nothing
    adapter = save_trained(trainer, tokenizer, out)  # complete under ZeRO-3, written by one process
    metrics = {**last_logged(trainer.state.log_history), **(extra_metrics or {})}
    if trainer.accelerator.is_main_process:
        (out / "train_summary.json").write_text(json.dumps({
            "rows": rows, "dropped_too_long": dropped, "steps": result.global_step, "train_loss": loss,
            "complete": not limit.stopped, "resumed_from": resume, "final_metrics": metrics}, indent=2),
            encoding="utf-8")
    return TrainResult(adapter=adapter, rows=rows, dropped=dropped, steps=result.global_step, loss=loss,
                       metrics=metrics, first_metrics=last_logged(trainer.state.log_history, 0),
                       complete=not limit.stopped, resumed_from=resume)


def train_sft(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """Supervised fine-tuning on the assistant turns of `messages` rows, or on the completions of
    conversational `prompt`/`completion` rows. With `assistant_only_loss` (the default) sparring
    computes which tokens are the replies for the model's own chat template (`masks.py`) and hands
    TRL token ids with that mask; otherwise TRL renders the rows (loss on every token of a
    `messages` row, on the completion of a prompt/completion row)."""
    from trl import SFTConfig, SFTTrainer

    out = Path(out)
    check_settings(settings)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    rows = read_rows(source)
    # `messages` rows train every assistant turn; prompt/completion rows (the exporter's format when
    # earlier turns are context) train the completion only
    columns = ("messages",) if not rows or "messages" in rows[0] else ("prompt", "completion")
    if settings.assistant_only_loss:
        examples = [sft_example(tokenizer, row) for row in rows]
        kept = [e for e in examples if len(e["input_ids"]) <= settings.max_length]
        dropped = len(examples) - len(kept)
        train_dataset = _dataset(kept, ("input_ids", "assistant_masks"))
    else:
        rows, dropped = _fit(rows, tokenizer, settings.max_length, ("messages",) if columns == ("messages",)
                             else ("completion",))
        kept = rows
        train_dataset = _dataset(rows, columns)
    if not kept:
        raise SparringError(f"no SFT rows fit max_length={settings.max_length} tokens ({dropped} too long)")
    args = training_args(settings, out, "sft")
    if settings.padding_free:  # the rows were filtered to max_length above; TRL enforces none when padding-free
        args.update(padding_free=True, max_length=None)
    config = SFTConfig(**args)
    trainer = SFTTrainer(model=model, args=config, train_dataset=train_dataset,
                         processing_class=tokenizer, peft_config=lora_config(settings), callbacks=callbacks)
    return _finish(trainer, model, tokenizer, out, len(kept), dropped, settings)


def sft_example(tokenizer: Any, row: dict[str, Any]) -> dict[str, list[int]]:
    """A row as token ids and the mask of its trained assistant turns: every assistant turn of a
    `messages` row; the completion's of a prompt/completion row (the prompt's are context)."""
    from sparring.train.masks import mask_chat

    if "messages" in row:
        chat = mask_chat(tokenizer, row["messages"], template=tokenizer.chat_template)
    else:
        messages = list(row["prompt"]) + list(row["completion"])
        trained = [len(row["prompt"]) + i for i, m in enumerate(row["completion"]) if m["role"] == "assistant"]
        chat = mask_chat(tokenizer, messages, trained=trained, template=tokenizer.chat_template)
    return {"input_ids": chat.input_ids, "assistant_masks": chat.assistant_masks}


def preference_tokens(tokenizer: Any, rows: Rows, sides: tuple[str, ...]) -> tuple[Rows, list[dict[str, list[int]]]]:
    """Each row with its prompt in the form the chat template renders (system text merged for a
    template without a system role), and its token ids by sparring's masks: `prompt_ids` and one
    `<side>_ids` per side (the reply and its end-of-turn token, nothing else)."""
    from sparring.models.chat import normalize
    from sparring.train.masks import pair_ids

    template = tokenizer.chat_template
    out_rows, tokens = [], []
    for row in rows:
        prompt = normalize(tokenizer, template, list(row["prompt"]) + list(row[sides[0]]))[:-1]
        ids: dict[str, list[int]] = {}
        for side in sides:
            prompt_ids, ids[f"{side}_ids"] = pair_ids(tokenizer, prompt, row[side], template)
            ids["prompt_ids"] = prompt_ids
        out_rows.append({**row, "prompt": prompt})
        tokens.append(ids)
    return out_rows, tokens


def _fit_tokens(rows: Rows, tokens: list[dict[str, list[int]]], max_length: int,
                sides: tuple[str, ...]) -> tuple[Rows, list[dict[str, list[int]]], int]:
    keep = [n for n, t in enumerate(tokens)
            if max(len(t["prompt_ids"]) + len(t[f"{s}_ids"]) for s in sides) <= max_length]
    return [rows[n] for n in keep], [tokens[n] for n in keep], len(rows) - len(keep)


def use_our_tokens(trainer: Any, tokens: list[dict[str, list[int]]]) -> None:
    """Replace the token ids TRL computed for each row with sparring's (same rows, same order), so
    TRL's DPO/KTO train exactly the masks SFT uses. TRL's KTO pairs each row with another row's
    completion for its KL term (`KL_completion_ids`): those are mapped to that row's ids too.
    Columns this TRL version does not have are left to it."""
    dataset = trainer.train_dataset
    columns = set(dataset.column_names)
    names = [c for c in tokens[0] if c in columns] if tokens else []
    if not names:
        return
    if len(dataset) != len(tokens):
        raise SparringError(f"TRL kept {len(dataset)} of {len(tokens)} rows; cannot align sparring's token ids")
    kl = "KL_completion_ids" in columns and "completion_ids" in names
    theirs = {tuple(r): n for n, r in enumerate(dataset["completion_ids"])} if kl else {}

    def swap(example: dict[str, Any], index: int) -> dict[str, Any]:
        new = {c: tokens[index][c] for c in names}
        if kl:
            other = theirs.get(tuple(example["KL_completion_ids"]))
            new["KL_completion_ids"] = tokens[other]["completion_ids"] if other is not None \
                else example["KL_completion_ids"]
        return new

    trainer.train_dataset = dataset.map(swap, with_indices=True)


def train_dpo(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """DPO on preference rows. With `settings.adapter`, that adapter is trained further and its
    weights before this run are the reference (the previous iteration's policy)."""
    from trl import DPOConfig, DPOTrainer

    from sparring.train.soft_dpo import SoftPreferenceDPOTrainer

    out = Path(out)
    check_settings(settings)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    rows, tokens = preference_tokens(tokenizer, read_rows(source), ("chosen", "rejected"))
    rows, tokens, dropped = _fit_tokens(rows, tokens, settings.max_length, ("chosen", "rejected"))
    if not rows:
        raise SparringError(f"no DPO pairs fit max_length={settings.max_length} tokens ({dropped} too long)")
    d = settings.dpo

    def dataset(*columns: str) -> Any:  # saved once, read by every process (one tokenisation / ref cache)
        return shared_dataset(_dataset(rows, columns), out / "trainer" / "rows")

    kwargs: dict[str, Any] = {"processing_class": tokenizer, "callbacks": callbacks}
    if d.soft:
        from transformers import TrainingArguments

        args = TrainingArguments(**training_args(settings, out, max_length=False), remove_unused_columns=False)
        from transformers import set_seed

        set_seed(settings.seed)  # the new adapter's initial weights do not depend on what ran before
        policy = with_new_adapter(model, lora_config(settings))
        if checkpointing(settings) and hasattr(policy, "peft_config"):
            policy.enable_input_require_grads()  # frozen embeddings + checkpointing would give no gradients
        trainer: Any = SoftPreferenceDPOTrainer(
            model=policy, args=args, beta=d.beta, sft_weight=d.sft_weight, positive=d.positive,
            train_dataset=dataset("prompt", "chosen", "rejected", "preference"), **kwargs)
    else:
        config = DPOConfig(**training_args(settings, out), beta=d.beta, loss_type=d.loss_type,
                           loss_weights=d.loss_weights)
        trainer = DPOTrainer(model=model, args=config, train_dataset=dataset("prompt", "chosen", "rejected"),
                             peft_config=lora_config(settings), **kwargs)
        use_our_tokens(trainer, tokens)
    # TRL's losses train on hard labels (p = 1): their soft-target floor is 0
    return _finish(trainer, model, tokenizer, out, len(rows), dropped, settings,
                   None if d.soft else {"soft/floor": 0.0})


def interleave_prompts(rows: Rows) -> Rows:
    """The rows in round-robin order over their prompts (the first row of every prompt, then the
    second of every prompt, ...), so that neighbouring rows answer different prompts where there
    are several. TRL's KTO estimates its KL reference point from each row's prompt with its
    neighbour's completion (it rotates completions by one within each batch of the dataset's
    order); rows of one prompt side by side, as an export of several replies per prompt lists
    them, make those "mismatched" pairs matched ones, and the reference point then follows the
    rewards themselves (measured on 8 prompts x 2 replies: KL 91.7 = the desirable rows' mean
    log-ratio, so their loss stayed at 1 - σ(0) = 0.5; interleaved: KL 7.6, loss 0.26 -> 0.02)."""
    groups: dict[str, Rows] = {}
    for row in rows:
        groups.setdefault(json.dumps(row["prompt"], sort_keys=True), []).append(row)
    depth = max((len(g) for g in groups.values()), default=0)
    return [g[i] for i in range(depth) for g in groups.values() if i < len(g)]


def train_kto(source: str | Path | Rows, settings: TrainSettings, out: str | Path,
              model_and_tokenizer: tuple[Any, Any] | None = None, callbacks: list[Any] | None = None) -> TrainResult:
    """KTO on rows labelled desirable / undesirable (reordered by `interleave_prompts`)."""
    from trl import KTOConfig, KTOTrainer

    out = Path(out)
    check_settings(settings)
    model, tokenizer = model_and_tokenizer or load_policy(settings)
    rows, tokens = preference_tokens(tokenizer, interleave_prompts(read_rows(source)), ("completion",))
    rows, tokens, dropped = _fit_tokens(rows, tokens, settings.max_length, ("completion",))
    if not rows or len({bool(r["label"]) for r in rows}) < 2:
        raise SparringError("KTO needs rows labelled both desirable and undesirable that fit max_length")
    k = settings.kto
    config = KTOConfig(**training_args(settings, out), beta=k.beta, desirable_weight=k.desirable_weight,
                       undesirable_weight=k.undesirable_weight)
    trainer = KTOTrainer(model=model, args=config, train_dataset=_dataset(rows, ("prompt", "completion", "label")),
                         processing_class=tokenizer, peft_config=lora_config(settings), callbacks=callbacks)
    use_our_tokens(trainer, tokens)
    return _finish(trainer, model, tokenizer, out, len(rows), dropped, settings)


TRAINERS = {"sft": train_sft, "dpo": train_dpo, "kto": train_kto}


def train(source: str | Path | Rows, settings: TrainSettings, out: str | Path) -> TrainResult:
    return TRAINERS[settings.method](source, settings, out)
