"""One batched `transformers.generate` call for rows that share sampling settings.

Why a custom logits processor instead of `do_sample=True`: HF samples the whole batch from one
global RNG, so a row's text would depend on which other rows share its batch. `RowSampler` picks
every row's token itself — argmax when greedy, else a Gumbel-max draw with noise from a
`torch.Generator` seeded from (request seed, step) — and leaves only that token finite, so HF's
greedy step selects it. The same request therefore gives the same text at batch size 1 and 32
(up to floating-point noise in the logits themselves).

Logprobs are taken from the *raw* model logits (log-softmax at temperature 1, before top-p), i.e.
the model's own distribution over the chosen token, as OpenAI-style APIs report them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from sparring.models.hf_kv import cache_kwarg
from sparring.types import Completion, Sampling, Usage

if TYPE_CHECKING:
    from sparring.models.hf_prefix import PrefixContext

_MASK63 = (1 << 63) - 1


def mix_seed(seed: int, step: int) -> int:
    """SplitMix64 of (seed, step): decorrelated per-step seeds without a shared RNG stream."""
    z = (seed * 0x9E3779B97F4A7C15 + (step + 1) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & ((1 << 64) - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & ((1 << 64) - 1)
    return (z ^ (z >> 31)) & _MASK63


class RowSampler(LogitsProcessor):
    """Chooses each row's next token (greedy or per-row seeded sampling) and records its logprob.

    Sampling uses the Gumbel-max trick: argmax(log p + Gumbel noise), the noise drawn from the row's
    own generator. Unlike an inverse-CDF draw (where rounding errors accumulate along the cumulative
    sum), a tiny change in the logits only flips the result if two perturbed scores nearly tie, so
    batch-size-dependent floating-point noise practically never changes the sample.
    """

    TOP_K_FAST = 512  # the top-p nucleus is looked for in the top-k first; full sort only if wider

    def __init__(self, prompt_len: int, seeds: Sequence[int], temperature: float, top_p: float):
        self.prompt_len = prompt_len
        self.seeds = list(seeds)
        self.temperature = temperature
        self.top_p = top_p
        self.logprobs: list[torch.Tensor] = []
        self._generators: list[torch.Generator] | None = None

    def _gumbel(self, step: int, shape: torch.Size, device: torch.device) -> torch.Tensor:
        if self._generators is None:
            self._generators = [torch.Generator(device=device) for _ in self.seeds]
        rows = []
        for seed, gen in zip(self.seeds, self._generators, strict=True):
            gen.manual_seed(mix_seed(seed, step))
            rows.append(torch.rand(shape[-1], generator=gen, device=device))
        return -torch.log(-torch.log(torch.stack(rows).clamp_(min=1e-30)))

    def _nucleus_floor(self, probs: torch.Tensor) -> torch.Tensor:
        """Per row, the smallest probability inside the top-p nucleus (shape [B, 1])."""

        def floor(desc: torch.Tensor) -> torch.Tensor:
            inside = (desc.cumsum(dim=-1) - desc) < self.top_p  # mass before the token < top_p
            return desc.gather(1, (inside.sum(dim=-1, keepdim=True) - 1).clamp_(min=0))

        top = probs.topk(min(self.TOP_K_FAST, probs.shape[-1]), dim=-1).values
        floors = floor(top)
        wide = top.sum(dim=-1) < self.top_p  # nucleus extends past the top-k: sort those rows
        if bool(wide.any()):
            floors[wide] = floor(probs[wide].sort(dim=-1, descending=True).values)
        return floors

    def _sample(self, scores: torch.Tensor, step: int) -> torch.Tensor:
        logp = torch.log_softmax(scores / self.temperature, dim=-1)
        if self.top_p < 1.0:
            logp = logp.masked_fill(logp.exp() < self._nucleus_floor(logp.exp()), float("-inf"))
        return (logp + self._gumbel(step, logp.shape, logp.device)).argmax(dim=-1)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:  # type: ignore[override]
        step = input_ids.shape[1] - self.prompt_len
        scores = scores.float()  # type: ignore[assignment]
        chosen = scores.argmax(dim=-1) if self.temperature == 0.0 else self._sample(scores, step)
        chosen_scores = scores.gather(1, chosen[:, None]).squeeze(1)
        self.logprobs.append(chosen_scores - torch.logsumexp(scores, dim=-1))
        forced = torch.full_like(scores, float("-inf"))
        forced.scatter_(1, chosen[:, None], 0.0)
        return forced  # type: ignore[return-value]


class StopCriteria(StoppingCriteria):
    """Per-row stop on an end-of-sequence id or a stop string; remembers the step each row ended.

    Only the last few generated tokens are decoded each step: an occurrence ending earlier would
    already have stopped the row.
    """

    def __init__(self, tokenizer, prompt_len: int, eos_ids: set[int], stops: Sequence[str], rows: int):
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.eos_ids = eos_ids
        self.stops = [s for s in stops if s]
        self.window = max((len(s) for s in self.stops), default=0) + 4
        self.done_at: list[int | None] = [None] * rows

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        step = input_ids.shape[1] - self.prompt_len - 1
        start = max(self.prompt_len, input_ids.shape[1] - self.window)
        tails = input_ids[:, start:].tolist()
        for row, tail in enumerate(tails):
            if self.done_at[row] is not None:
                continue
            if tail[-1] in self.eos_ids:
                self.done_at[row] = step
            elif self.stops:
                text = self.tokenizer.decode(tail, skip_special_tokens=True)
                if any(s in text for s in self.stops):
                    self.done_at[row] = step
        return torch.tensor([d is not None for d in self.done_at], device=input_ids.device)  # type: ignore[return-value]


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """Text before the earliest stop string, and whether one was found."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def generate_batch(model, base_model, tokenizer, prompts: Sequence[Sequence[int]], sampling: Sampling,
                   seeds: Sequence[int], pad_id: int, eos_ids: set[int], device,
                   prefix: PrefixContext | None = None, kv_layers: int | None = None,
                   hidden: bool = False) -> list[Completion]:
    """Generate for rows that share `sampling` (all but the seed); one HF `generate` call.

    With a `prefix` cache, every prompt but its last token is first made cached (reusing what is
    there, computing the rest in tight batches), so generate() starts from the packed states and
    runs only the last column; afterwards each row's prompt and reply are stored for the next turn.

    `token_ids` include the token that ended the row (EOS or the one completing a stop string), as
    TRL's completion ids do; `text` excludes special tokens and is cut before the first stop string.
    `kv_layers` (the model's decoder layer count, when its cache is plain per-layer keys/values)
    switches to a preallocated cache, see `hf_kv`. `hidden`: each completion also carries the
    decoder's last hidden state at its prompt's last token (`Completion.hidden`), read by a forward
    hook on the decoder (PyTorch's public hook API) in generate()'s first step, which computes
    exactly that position for every row.
    """
    from sparring.models.hf_prefix import pack

    start = time.perf_counter()  # latency includes filling the prefix cache
    found = (prefix.prepare(model, [p[:-1] for p in prompts], pad_id, device) if prefix is not None
             else [(0, [])] * len(prompts))
    packed = pack([(p, n, pieces) for p, (n, pieces) in zip(prompts, found, strict=True)], pad_id, device,
                  room=sampling.max_new_tokens)
    input_ids, mask = packed.input_ids, packed.attention_mask
    width = input_ids.shape[1]
    sampler = RowSampler(width, seeds, sampling.temperature, sampling.top_p)
    stopper = StopCriteria(tokenizer, width, eos_ids, sampling.stop, len(prompts))
    eos = sorted(eos_ids) or None
    config = GenerationConfig(max_new_tokens=sampling.max_new_tokens, do_sample=False, num_beams=1,
                              pad_token_id=pad_id, eos_token_id=eos, use_cache=True)
    # generate() fills unset fields from model.generation_config (a checkpoint's repetition
    # penalty, temperature, suppressed tokens...). Swap in a neutral one so Sampling alone decides.
    saved = base_model.generation_config
    base_model.generation_config = GenerationConfig(pad_token_id=pad_id, eos_token_id=eos,
                                                    bos_token_id=saved.bos_token_id)
    cache = packed.cache(kv_layers)
    extra = {cache_kwarg(base_model): cache} if cache is not None else {}
    first: list[torch.Tensor] = []

    def grab(module: Any, args: Any, output: Any) -> None:
        if not first:  # generate()'s first step: the prompts' last column
            states = output.last_hidden_state if hasattr(output, "last_hidden_state") else output[0]
            first.append(states[:, -1].detach().float().cpu())

    handle = base_model.get_decoder().register_forward_hook(grab) if hidden else None
    try:
        result = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config,
                                logits_processor=LogitsProcessorList([sampler]),
                                stopping_criteria=StoppingCriteriaList([stopper]), **extra)
    finally:
        base_model.generation_config = saved
        if handle is not None:
            handle.remove()
    latency = time.perf_counter() - start
    generated = result[:, width:].tolist()
    logprobs = torch.stack(sampler.logprobs, dim=1).tolist() if sampler.logprobs else [[]] * len(prompts)
    out = []
    for row, ids in enumerate(generated):
        end = stopper.done_at[row]
        n = len(ids) if end is None else end + 1
        if prefix is not None:
            # states exist for the prompt and every generated token but the last
            seq = [*prompts[row], *ids[: n - 1]]
            prefix.cache.insert(prefix.namespace, seq, packed.row_states(cache, row, len(seq)))
        text, hit = cut_at_stop(tokenizer.decode(ids[:n], skip_special_tokens=True), sampling.stop)
        out.append(Completion(
            text=text, finish_reason="stop" if (end is not None or hit) else "length",
            token_ids=ids[:n], logprobs=[float(x) for x in logprobs[row][:n]],
            usage=Usage(prompt_tokens=len(prompts[row]), completion_tokens=n), latency_s=latency,
            hidden=first[0][row].tolist() if first else None))
    return out
