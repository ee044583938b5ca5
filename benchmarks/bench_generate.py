"""Generation throughput of the `hf` backend at several batch sizes.

Every row gets the same prompt and generates exactly `--new-tokens` tokens (`ignore_eos`), so
tokens/s are comparable across batch sizes; the table shows the speed-up over batch size 1.

    python benchmarks/bench_generate.py                       # bundled SmolLM2-135M, batch 1/4/16/32
    python benchmarks/bench_generate.py --batch-sizes 1,8 --new-tokens 64 --sample --device cuda

On a small shared CPU box, `--threads 1` avoids OpenMP oversubscription when other processes
compete for the cores (with 2 threads under load, every step can be 10x slower).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

from rich.console import Console
from rich.table import Table

PROMPT = ("You are judging a debate about whether the narrator of a short story trusted the stranger. "
          "Summarise the strongest argument for each side in two sentences.")


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled:smollm2-135m", help="hf model (hub id, dir, bundled:...)")
    parser.add_argument("--batch-sizes", default="1,4,16,32", help="comma-separated batch sizes")
    parser.add_argument("--new-tokens", type=int, default=32, help="tokens generated per row")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per batch size (best is kept)")
    parser.add_argument("--sample", action="store_true", help="temperature 0.7 / top-p 0.9 with seeds "
                        "instead of greedy (includes the per-row sampler's cost)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def main(argv: list[str] | None = None) -> list[dict]:
    args = parse_args(argv)
    import torch

    from sparring.models.hf import HFModel
    from sparring.types import GenerateRequest, Message, Sampling

    console = Console()
    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.batch_sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 1:
        raise SystemExit("--batch-sizes must list positive integers, e.g. 1,4,16")
    start = time.perf_counter()
    model = HFModel(name="bench", model=args.model, device=args.device, dtype=args.dtype,
                    max_batch_size=max(sizes), ignore_eos=True,
                    prefix_cache_mb=0)  # rows share one prompt: measure batching, not prefix reuse
    console.print(f"loaded {args.model} on {model.device} in {time.perf_counter() - start:.1f}s "
                  f"(torch threads: {torch.get_num_threads()}, {platform.processor() or platform.machine()})")

    def requests(n: int) -> list[GenerateRequest]:
        return [GenerateRequest(
            messages=[Message(role="user", content=PROMPT)],
            sampling=Sampling(max_new_tokens=args.new_tokens, temperature=0.7 if args.sample else 0.0,
                              top_p=0.9 if args.sample else 1.0, seed=i if args.sample else None))
            for i in range(n)]

    model.generate(requests(1)[:1])  # warm-up: allocator, kernels, lazy imports
    results = []
    for size in sizes:
        batch = requests(size)
        best = float("inf")
        for _ in range(max(1, args.repeats)):
            t0 = time.perf_counter()
            out = model.generate(batch)
            best = min(best, time.perf_counter() - t0)
        generated = sum(c[0].usage.completion_tokens for c in out)
        assert generated == size * args.new_tokens, "ignore_eos should give exactly new_tokens per row"
        results.append({"batch_size": size, "new_tokens": args.new_tokens, "seconds": best,
                        "tokens_per_s": generated / best, "prompt_tokens": out[0][0].usage.prompt_tokens})

    base = next((r["tokens_per_s"] for r in results if r["batch_size"] == 1), results[0]["tokens_per_s"])
    table = Table(title=f"hf generate throughput — {args.model}, {args.new_tokens} new tokens/row, "
                        f"{'sampled' if args.sample else 'greedy'}, {model.device}")
    for column in ("batch", "prompt tok", "seconds", "tokens/s", "× batch 1"):
        table.add_column(column, justify="right")
    for r in results:
        r["ratio_to_batch1"] = r["tokens_per_s"] / base
        table.add_row(str(r["batch_size"]), str(r["prompt_tokens"]), f"{r['seconds']:.2f}",
                      f"{r['tokens_per_s']:.1f}", f"{r['ratio_to_batch1']:.2f}")
    console.print(table)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"model": args.model, "device": str(model.device), "results": results}, fh, indent=1)
    return results


if __name__ == "__main__":
    main()
