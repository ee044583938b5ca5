"""Generated tokens/s of the same debates with the bundled model, three ways:

  (a) through the engine (lockstep runner: every live episode's requests batched per tick, store);
  (b) the exact batches (a) sent to the model, replayed as raw `generate`/`score` calls — the
      ceiling the engine can reach with this backend;
  (c) one episode at a time through the engine (max_live 1) — what a per-episode loop gets.

Targets: a/b >= 0.9 (the engine adds < 10 %), a/c >= 6 (batching across episodes pays).

    python benchmarks/bench_debate_throughput.py                  # ~5 minutes on 2 CPU cores
    python benchmarks/bench_debate_throughput.py --questions 32 --rounds 2 --max-new-tokens 64
    python benchmarks/bench_debate_throughput.py --questions 24 --max-new-tokens 96 \
        --max-live 64 --max-batch-size 64 --c-questions 3     # decode-heavy: where batching pays on CPU

Rows ignore EOS by default (`--stop-at-eos` to disable) so that (a), (b) and (c) generate the
same number of tokens whatever the sampled text; the judge's verdicts (score calls) are timed too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from sparring.models.base import Model


class Recording(Model):
    """Delegates to a real model and logs every batched call the engine makes."""

    def __init__(self, inner: Model):
        self.inner, self.name, self.log = inner, inner.name, []
        self.concurrent = inner.concurrent
        self.can_score = inner.can_score

    def generate(self, requests):  # type: ignore[override]
        self.log.append(("generate", list(requests)))
        return self.inner.generate(requests)

    def score(self, requests):  # type: ignore[override]
        self.log.append(("score", list(requests)))
        return self.inner.score(requests)

    def _generate(self, requests):  # pragma: no cover - generate is overridden; kept for the ABC
        return self.inner._generate(requests)


def config(a: argparse.Namespace, questions: int | None = None) -> dict[str, Any]:
    return {"name": "bench-throughput", "game": "debate",
            "game_args": {"format": "debate", "rounds": a.rounds, "speech_word_limit": 40},
            "dataset": {"name": "generated", "split": "test", "limit": questions or a.questions,
                        "args": {"people": a.people, "filler_sentences": a.filler}},
            "agents": {"debater": {"role": "debater", "model": "smollm2-135m",
                                   "sampling": {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": a.max_new_tokens}},
                       "judge": {"role": "judge", "model": "smollm2-135m", "sampling": {"max_new_tokens": 16}}},
            "tournament": {"type": "self_play", "participants": ["debater"], "judges": ["judge"], "flip": True},
            "run": {"seed": 0, "max_live": a.max_live}}


def fresh(model: Model) -> Model:
    """Empty the backend's prefix cache so that no row starts with states a previous row left."""
    inner = getattr(model, "inner", model)
    if getattr(inner, "prefix_cache", None) is not None:
        inner.clear_prefix_cache()
        inner.prefix_cache.hits = inner.prefix_cache.misses = 0
    return model


def reuse(model: Model) -> str:
    """Share of prompt tokens served from the prefix cache since the last `fresh`."""
    cache = getattr(getattr(model, "inner", model), "prefix_cache", None)
    if cache is None or not cache.hits + cache.misses:
        return ""
    return f"   [prefix cache: {cache.hits / (cache.hits + cache.misses):.0%} of prompt tokens reused]"


def engine_run(path: Path, out: str, model: Model, max_live: int, name: str) -> tuple[float, float, int, int]:
    """(wall s, CPU s, generated tokens, episodes) of one run through run_experiment."""
    fresh(model)
    from rich.console import Console

    from sparring.engine.run import RunOptions, run_experiment
    from sparring.models.pool import ModelPool
    from sparring.records.reader import iter_records

    pool = ModelPool()
    pool.add("smollm2-135m", model)
    opts = RunOptions(configuration=str(path), output_dir=out, run_name=name, max_live=max_live, quiet=True)
    start, cpu = time.perf_counter(), time.process_time()
    res = run_experiment(opts, console=Console(quiet=True), pool=pool)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    tokens = sum(u.completion_tokens for r in iter_records(res.run_dir) for u in r.usage.values())
    return wall, cpu, tokens, res.summary["done"] + res.summary["failed"]


def _line(key: str, label: str, tokens: int, seconds: float, cpu: float, note: str = "") -> None:
    print(f"({key}) {label:30s} {tokens:7d} tokens in {seconds:7.1f} s = {tokens / seconds:7.1f} tokens/s"
          f"   ({tokens / cpu:6.1f} per CPU-s){note}", flush=True)


def _warm_up(model: Model) -> None:
    """First calls pay one-off costs (allocator, kernel selection); keep them out of (a)."""
    from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

    msgs = [Message(role="user", content="Say something about debates.")]
    model.generate([GenerateRequest(messages=msgs, sampling=Sampling(max_new_tokens=4, seed=0))] * 2)
    model.score([ScoreRequest(messages=msgs, options=["yes", "no"])])


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py checks the documented ones against it)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=8, help="questions (x2 with flip = debates)")
    ap.add_argument("--people", type=int, default=2, help="people per generated story (story length)")
    ap.add_argument("--filler", type=int, default=0, help="filler sentences per generated story")
    ap.add_argument("--rounds", type=int, default=1, help="speeches per debater")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--max-live", type=int, default=64, help="engine batch width for (a)")
    ap.add_argument("--max-batch-size", type=int, default=32, help="backend rows per forward pass")
    ap.add_argument("--c-questions", type=int, default=None,
                    help="questions for (c) (default: all). One episode at a time, tokens/s does not "
                         "depend on how many are played, so a few measure it in a fraction of the time")
    ap.add_argument("--no-warm-pass", action="store_true",
                    help="skip the untimed engine pass that warms caches for (a) and (b) alike")
    ap.add_argument("--stop-at-eos", action="store_true", help="let rows stop at EOS (token counts then differ)")
    ap.add_argument("--ceiling", action="store_true",
                    help="also (d): (b)'s requests one per call — the backend's own batching gain b/d "
                         "bounds what a/c can reach on this hardware")
    return ap


def main() -> None:
    a = build_parser().parse_args()

    from sparring.models.registry import create_model, get_model_spec, load_model_specs

    spec = get_model_spec("smollm2-135m", load_model_specs())
    spec = spec.model_copy(update={"args": {**spec.args, "max_batch_size": a.max_batch_size,
                                            "ignore_eos": not a.stop_at_eos}})
    t0 = time.perf_counter()
    model = create_model(spec)
    print(f"bundled model loaded in {time.perf_counter() - t0:.1f} s; {a.questions} questions x 2 sides, "
          f"{a.rounds} round(s), {a.max_new_tokens} new tokens per speech", flush=True)
    _warm_up(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.yaml"
        path.write_text(yaml.safe_dump(config(a)))
        if not a.no_warm_pass:
            # An untimed pass first: (a) and (b) then both run with warm caches (kernels for these
            # batch shapes, allocator, chat template); otherwise (b) inherits (a)'s warm-up for free.
            w, _, _, _ = engine_run(path, tmp, model, a.max_live, "warm")
            print(f"(warm-up pass through the engine, untimed: {w:.1f} s)", flush=True)
        rec = Recording(model)
        ta, ca, tok_a, n = engine_run(path, tmp, rec, a.max_live, "a")
        _line("a", "engine, batched", tok_a, ta, ca, reuse(model))
        batches = rec.log
        fresh(model)
        t0, c0 = time.perf_counter(), time.process_time()
        tok_b = 0
        for op, reqs in batches:
            if op == "generate":
                tok_b += sum(c.usage.completion_tokens for row in model.generate(reqs) for c in row)
            else:
                model.score(reqs)
        tb, cb = time.perf_counter() - t0, time.process_time() - c0
        _line("b", "raw batched generate", tok_b, tb, cb, reuse(model))
        path_c = path
        if a.c_questions and a.c_questions < a.questions:
            path_c = Path(tmp) / "bench-c.yaml"
            path_c.write_text(yaml.safe_dump(config(a, a.c_questions)))
        tc, cc, tok_c, n_c = engine_run(path_c, tmp, model, 1, "c")
        _line("c", f"one episode at a time ({n_c} ep.)", tok_c, tc, cc, reuse(model))
        if a.ceiling:
            fresh(model)
            t0, c0, tok_d = time.perf_counter(), time.process_time(), 0
            for op, reqs in batches:
                for r in reqs:
                    if op == "generate":
                        tok_d += sum(c.usage.completion_tokens for c in model.generate([r])[0])
                    else:
                        model.score([r])
            td, cd = time.perf_counter() - t0, time.process_time() - c0
            _line("d", "(b)'s requests one per call", tok_d, td, cd)
    sizes = [len(r) for op, r in batches if op == "generate"]
    print(f"{n} debates; the engine sent {len(batches)} batched calls (generate batch sizes {sizes})")
    rate = {"a": tok_a / ta, "b": tok_b / tb, "c": tok_c / tc}
    if a.ceiling:
        rate["d"] = tok_d / td
    print(f"a/b = {rate['a'] / rate['b']:.2f} (target >= 0.9)   a/c = {rate['a'] / rate['c']:.2f} (target >= 6)"
          f"   [per CPU-second: a/b = {(tok_a / ca) / (tok_b / cb):.2f}, a/c = {(tok_a / ca) / (tok_c / cc):.2f};"
          " robust to other load on the machine]")
    if a.ceiling:
        print(f"b/d = {rate['b'] / rate['d']:.2f}: the backend's own gain from these batch sizes on this "
              "hardware, the ceiling for a/c")
    model.close()


if __name__ == "__main__":
    main()
