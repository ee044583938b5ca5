#!/usr/bin/env python
"""LoRA SFT defaults measured on this machine: gradient checkpointing on/off and the learning rate.

1. Gradient checkpointing: median step time and peak RSS of SFT steps with it on and off (each in
   its own process, so peak RSS is that configuration's). It trades compute for activation memory.
2. Learning rate: SFT of the bundled model on real human Deal or No Deal turns (the warm start's
   rows: --data, else $SPARRING_DATA_DIR or `sparring data fetch dond-dialogues`), the same rows and seed for each rate;
   the mean training loss of the first and of the last two steps, and the loss on held-out rows
   after training (base model's held-out loss printed first).

    python benchmarks/bench_lora_defaults.py                      # bundled SmolLM2-135M (minutes)
    python benchmarks/bench_lora_defaults.py --model tiny --steps 2  # a quick check
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def dond_rows(path: str, n: int, offset: int = 0) -> list[dict]:
    from sparring.train.export.human import human_sft_rows

    rows = human_sft_rows("dond", path, split="train", limit=(n + offset) // 2 + 8)
    return [{"messages": r["messages"]} for r in rows][offset:offset + n]


def model_path(name: str, work: Path) -> str:
    if name != "tiny":
        return name
    from sparring.models.tiny import save_tiny_model

    return str(save_tiny_model(work / "tiny"))


def one(args: argparse.Namespace) -> dict:
    """One configuration in this process: step times, losses, peak RSS, held-out loss."""
    import torch
    from transformers import TrainerCallback

    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy
    from sparring.train.trainers import train_sft

    class Log(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.losses: list[float] = []
            self._t = 0.0

        def on_step_begin(self, a, state, control, **kw):
            self._t = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            self.times.append(time.perf_counter() - self._t)

        def on_log(self, a, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    work = Path(tempfile.mkdtemp(prefix="bench-lora-"))
    settings = TrainSettings(model=model_path(args.model, work), max_steps=args.steps, batch_size=args.batch_size,
                             learning_rate=args.lr, gradient_checkpointing=args.gc, max_length=1024,
                             logging_steps=1, save_steps=0)
    rows = dond_rows(args.data, args.steps * args.batch_size)
    held = dond_rows(args.data, args.held_out, offset=args.steps * args.batch_size + 40)
    model, tok = load_policy(settings)
    log = Log()
    train_sft(rows, settings, work / "out", model_and_tokenizer=(model, tok), callbacks=[log])
    out = {"step_s": statistics.median(log.times[1:] or log.times), "losses": log.losses,
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
           "tokens_per_row": statistics.mean(len(ids(tok, r["messages"])) for r in rows)}
    if args.held_out:
        from peft import PeftModel

        trained = PeftModel.from_pretrained(load_policy(settings.model_copy(update={"lora": None}))[0],
                                            str(work / "out"))
        out["held_out_loss"] = held_out_loss(trained, tok, held)
        with trained.disable_adapter():
            out["base_held_out_loss"] = held_out_loss(trained, tok, held)
    del torch
    return out


def ids(tok, messages: list[dict], prompt: bool = False) -> list[int]:
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=prompt)
    return tok(text, add_special_tokens=False)["input_ids"]


def held_out_loss(model, tok, rows: list[dict]) -> float:
    """Mean loss of the last assistant turn given its context (what SFT trains)."""
    import torch

    losses = []
    model.eval()
    with torch.no_grad():
        for r in rows:
            full = ids(tok, r["messages"])
            ctx = ids(tok, r["messages"][:-1], prompt=True)
            batch = torch.tensor([full])
            labels = batch.clone()
            labels[:, : len(ctx)] = -100
            losses.append(float(model(input_ids=batch, labels=labels).loss))
    return statistics.mean(losses)


def run(args: argparse.Namespace, **kw) -> dict:
    cmd = [sys.executable, __file__, "--one", "--model", args.model, "--data", args.data,
           "--steps", str(kw.get("steps", args.steps)), "--batch-size", str(args.batch_size),
           "--lr", str(kw.get("lr", 5e-5)), "--held-out", str(kw.get("held_out", 0))]
    if kw.get("gc", True):
        cmd.append("--gc")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name, a directory, or 'tiny'")
    ap.add_argument("--data", default=None, help="the Deal or No Deal human dialogues (data.txt or its folder)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--lr-steps", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--held-out", type=int, default=16)
    ap.add_argument("--lrs", default="5e-5,2e-4,5e-4")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--gc", action="store_true")
    ap.add_argument("--only", choices=("gc", "lr"), help="run only one of the two measurements")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    return ap


def main() -> None:
    args = build_parser().parse_args()
    from sparring.datafiles import resolve

    args.data = str(resolve("dond-dialogues", args.data, "--data PATH"))
    if args.one:
        print(json.dumps(one(args)))
        return
    print(f"model {args.model}; SFT with LoRA r=8 on human Deal or No Deal turns, batch {args.batch_size}")
    gc = {on: run(args, gc=on) for on in (True, False)} if args.only != "lr" else {}
    for on, r in gc.items():
        print(f"gradient checkpointing {'on ' if on else 'off'}: step {r['step_s']:6.2f} s (median)  "
              f"peak RSS {r['peak_rss_gb']:.2f} GB  ({r['tokens_per_row']:.0f} tokens/row)")
    if gc:
        print(f"time off/on = {gc[False]['step_s'] / gc[True]['step_s']:.2f}   "
              f"peak RSS off/on = {gc[False]['peak_rss_gb'] / gc[True]['peak_rss_gb']:.2f}")
    for lr in [] if args.only == "gc" else [float(x) for x in args.lrs.split(",")]:
        r = run(args, lr=lr, steps=args.lr_steps, held_out=args.held_out, gc=False)
        first, last = r["losses"][0], statistics.mean(r["losses"][-2:])
        print(f"lr {lr:7.1e}: train loss step 1 {first:.3f} -> last 2 steps {last:.3f}; held-out loss "
              f"{r['base_held_out_loss']:.3f} (base) -> {r['held_out_loss']:.3f} after {args.lr_steps} steps "
              f"(n={args.held_out})")


if __name__ == "__main__":
    main()
