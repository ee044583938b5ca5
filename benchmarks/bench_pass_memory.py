#!/usr/bin/env python
"""What one training pass of sparring's online trainer holds on a CPU: the resident set it adds by
the end of the forward and at the backward's peak, with glibc's allocator as it is or returning
freed memory (`--return-memory`: `sparring.train.host_memory`, the online config's
`return_freed_memory`). Run each variant in a fresh process (the allocator's setting and its
retained memory are the process's):

    OMP_NUM_THREADS=2 python benchmarks/bench_pass_memory.py --rows 8 --width 1075 --checkpointing
    OMP_NUM_THREADS=2 python benchmarks/bench_pass_memory.py --rows 8 --width 1075 --checkpointing --return-memory

The rows are random tokens of TicTacToe-game length (each row 37 shorter than the one before, 20
trained positions at its end), the policy the bundled model with a fresh LoRA adapter (sparring's
defaults: r 8 on every linear layer), no dropout, the trainer's own `forward` (right-padded rows, no mask, no
shared prefix). Linux only (the figures are /proc/self/status's `VmRSS` and `VmHWM`).
"""

from __future__ import annotations

import argparse
import time


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name or a model directory")
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--width", type=int, default=1075, help="the longest row's tokens")
    ap.add_argument("--checkpointing", action="store_true", help="recompute the layers in the backward")
    ap.add_argument("--return-memory", action="store_true", help="glibc returns freed memory (return_freed_memory)")
    return ap


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.return_memory:
        from sparring.train.host_memory import return_freed_memory

        if not return_freed_memory():
            raise SystemExit("--return-memory: not a Linux glibc process")
    import torch

    from sparring.train import peak_memory
    from sparring.train.config import LoraSettings, TrainSettings
    from sparring.train.online.trainer.forward import forward
    from sparring.train.online.trainer.items import Item
    from sparring.train.policy import load_policy, lora_config, prepare_training, with_new_adapter

    settings = TrainSettings(model=args.model, lora=LoraSettings(dropout=0.0))
    model, tokenizer = load_policy(settings)
    model = with_new_adapter(model, lora_config(settings))
    prepare_training(model, True, args.checkpointing)
    model.train()
    vocab = int(model.get_input_embeddings().weight.shape[0])
    generator = torch.Generator().manual_seed(0)
    items = []
    for b in range(args.rows):
        n = args.width - 37 * b
        ids = torch.randint(0, vocab, (n,), generator=generator).tolist()
        items.append(Item(episode=b, ids=ids, positions=list(range(n - 20, n)), token_turn=[0] * 20,
                          starts=[n - 21], turns=[0]))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    if not peak_memory.reset():
        raise SystemExit("no resident-set figures here (Linux's /proc/self only)")
    start = peak_memory.in_use_mb()
    began = time.perf_counter()
    logprobs, _, _ = forward(model, None, items, 1.0, pad, share_prefix=False)
    loss = torch.stack([lp.sum() for lp in logprobs]).sum()
    held = peak_memory.in_use_mb() - start
    peak_memory.reset()
    loss.backward()
    peak = peak_memory.peak_mb() - start
    positions = args.rows * args.width
    print(f"{'checkpointed' if args.checkpointing else 'activations kept'}, "
          f"{'freed memory returned' if args.return_memory else 'glibc defaults'}: {args.rows} rows, "
          f"{positions} padded positions; added by the forward's end {held / 1024:.2f} GiB, at the backward's peak "
          f"{peak / 1024:.2f} GiB ({peak / positions:.3f} MiB a position); {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
