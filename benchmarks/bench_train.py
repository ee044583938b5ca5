#!/usr/bin/env python
"""Training throughput on this machine, as ratios and tokens/s.

1. Soft-preference DPO step time / plain TRL DPO (sigmoid) step time, same pairs, same model,
   same LoRA (target <= 1.05: one policy forward per step in both; the soft loss takes its
   log-probs from the logits through public APIs, TRL's DPO through its own fused LM head).
2. SFT and DPO tokens/s with LoRA (tokens of the rows a step trains on / the step's wall time).

    python benchmarks/bench_train.py                 # the bundled SmolLM2-135M (slow on a CPU)
    python benchmarks/bench_train.py --model tiny    # a 2-layer random model: a quick check
Steps after the first are timed (the first includes warm-up); the median is reported.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def step_timer():
    """A TrainerCallback timing each optimizer step (transformers is imported here, so that `--help`
    and importing this file stay instant)."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self._t = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._t = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self._t)

        def median(self) -> float:
            timed = self.times[1:] or self.times
            return statistics.median(timed)

    return StepTimer()


def rows(n: int, words: int) -> tuple[list[dict], list[dict]]:
    prompt = [{"role": "system", "content": "You argue for your side of a debate about a story. " * 4},
              {"role": "user", "content": "The story: " + "The keeper walked along the shore at dawn. " * (words // 9)}]
    sft = [{"messages": prompt + [{"role": "assistant", "content": f"My answer is right because of line {i}. " * 6}]}
           for i in range(n)]
    dpo = [{"prompt": prompt, "chosen": [{"role": "assistant", "content": f"The story says so in line {i}. " * 5}],
            "rejected": [{"role": "assistant", "content": "I think so. " * (5 + i % 3)}], "preference": 0.7 + 0.02 * i}
           for i in range(n)]
    return sft, dpo


def tokens(tokenizer, rows_: list[dict], kind: str) -> float:
    def n(msgs):
        return len(tokenizer(tokenizer.apply_chat_template(msgs, tokenize=False), add_special_tokens=False)["input_ids"])

    if kind == "sft":
        return statistics.mean(n(r["messages"]) for r in rows_)
    return statistics.mean(n(r["prompt"] + r["chosen"]) + n(r["prompt"] + r["rejected"]) for r in rows_)


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name, a directory, or 'tiny'")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--words", type=int, default=180, help="story words per prompt")
    return ap


def main() -> None:
    args = build_parser().parse_args()

    from sparring.train.config import TrainSettings
    from sparring.train.policy import load_policy
    from sparring.train.trainers import train_dpo, train_sft

    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    model = args.model
    if model == "tiny":
        from sparring.models.tiny import save_tiny_model

        model = str(save_tiny_model(work / "tiny"))
    n = args.steps * args.batch_size
    sft_rows, dpo_rows = rows(n, args.words)
    common = {"model": model, "max_steps": args.steps, "batch_size": args.batch_size, "max_length": 2048,
              "logging_steps": 10_000}
    results = {}
    for name, fn, data, extra in (("sft", train_sft, sft_rows, {}),
                                  ("dpo", train_dpo, dpo_rows, {"method": "dpo"}),
                                  ("soft_dpo", train_dpo, dpo_rows, {"method": "dpo", "dpo": {"soft": True}})):
        settings = TrainSettings(**common, **extra)
        timer = step_timer()
        policy = load_policy(settings)
        fn(data, settings, work / name, model_and_tokenizer=policy, callbacks=[timer])
        per_row = tokens(policy[1], data, "sft" if name == "sft" else "dpo")
        results[name] = (timer.median(), per_row * args.batch_size / timer.median())
        print(f"{name:9s} step {timer.median():7.2f} s (median of {len(timer.times) - 1} timed)  "
              f"{results[name][1]:8.1f} tokens/s  ({per_row:.0f} tokens per row, batch {args.batch_size})")
    ratio = results["soft_dpo"][0] / results["dpo"][0]
    print(f"\nsoft-preference DPO step / plain DPO step = {ratio:.3f}   target <= 1.05   "
          f"({'met' if ratio <= 1.05 else 'NOT met'})")
    print(f"model {args.model}, LoRA r=8, {args.steps} steps of batch {args.batch_size}; plain DPO computes "
          "reference log-probs each step, the soft loss precomputes them once before training")


if __name__ == "__main__":
    main()
