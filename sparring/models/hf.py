"""The `hf` backend: a local transformers causal LM with true batched generation and scoring.

- `generate`: requests sharing sampling settings (all but the seed) and adapter are left-padded
  into batches of `max_batch_size`; per-row seeded sampling makes a request's text independent of
  its batch (see `hf_generate`).
- `score`: teacher-forced log P(option | prompt) for every (request, option) row, batched.
- Several named LoRA adapters can sit on one base model and be picked per request.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, model_validator

from sparring.errors import BackendError, ConfigError, ContextOverflowError, UnknownNameError
from sparring.models.base import Model, register_backend
from sparring.types import GenerateRequest, Message, ScoreRequest

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from sparring.models.hf_score import Row

# torch/transformers are imported when a model is built, not with this module: the registry
# imports every backend to validate model specs, and a run with only API or scripted models
# should not pay ~250 MB and seconds of imports for a backend it does not use.

BASE_ADAPTER = "base"  # adapter name meaning "all adapters disabled"


@register_backend("hf")
class HFModel(Model):
    """A Hugging Face causal LM run in-process (CPU or one GPU)."""

    can_score = True

    class Args(Model.Args):
        model: str = Field(description="Hugging Face id (downloaded and cached on first use), local dir, "
                                       "or bundled:smollm2-135m")
        revision: str | None = Field(None, description="hub branch, tag or commit hash to pin (default: main)")
        tokenizer: str | None = Field(None, description="tokenizer source if not the model's")
        gguf_file: str | None = Field(None, description="GGUF file inside `model` (de-quantised on load)")
        adapters: dict[str, str] = Field(default_factory=dict, description="name -> PEFT LoRA adapter dir")
        default_adapter: str | None = Field(None, description="adapter for adapter=None; 'base' = none")
        dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"  # auto: bf16 on CUDA, else fp32
        device: str = "auto"  # auto: cuda if available, else cpu
        quantization: Literal["4bit", "8bit"] | None = None  # bitsandbytes; CUDA only
        max_batch_size: int = Field(16, ge=1, description="rows per generate call / forward pass")
        max_context: int | None = Field(None, ge=2, description="default: tokenizer/model limit")
        truncation: Literal["error", "left"] = Field(
            "error", description="prompt too long: raise ContextOverflowError, or drop its oldest tokens")
        chat_template: str | None = Field(None, description="Jinja template string or .jinja file")
        trust_remote_code: bool = False
        ignore_eos: bool = Field(False, description="never stop at EOS (benchmarks: fixed output length)")
        compile: bool = Field(False, description="torch.compile the forward: slow first call, for GPU runs")
        cudnn_attention: bool = Field(
            False, description="let attention use cuDNN on CUDA; off because cuDNN plans anew for every "
            "key/value length, which generation meets at every step (see models/hf_attention.py)")
        prefix_cache_mb: int = Field(
            1024, ge=0, description="memory for reusing the states of already-seen prompt prefixes "
            "(earlier turns, a shared story, a judge's options); 0 disables")

        @model_validator(mode="after")
        def _check_adapters(self) -> HFModel.Args:
            if BASE_ADAPTER in self.adapters:
                raise ValueError(f"adapter name {BASE_ADAPTER!r} is reserved for 'no adapter'")
            return self

    args: Args  # the validated `args:` of this backend's spec

    def __init__(self, name: str = "model", **kwargs: Any):
        from sparring.models import hf_load

        super().__init__(name, **kwargs)
        device = hf_load.resolve_device(self.args.device)
        dtype = hf_load.resolve_dtype(self.args.dtype, device)
        hf_load.quantization_config(self.args.quantization, device, dtype)  # fail before loading
        self._check_default_adapter(set(self.args.adapters))
        tokenizer = hf_load.load_tokenizer(self.args)
        model = hf_load.load_model(self.args, device, dtype)
        self._attach(model, tokenizer)

    @classmethod
    def from_objects(cls, model, tokenizer, name: str = "model", **args: Any) -> HFModel:
        """Wrap an already-loaded model/tokenizer (tests, training loops).

        With device/dtype left at `auto` the model stays where it is; the model's train/eval mode
        is restored after every call, so a training loop can keep using it.
        """
        from sparring.models import hf_load

        args.setdefault("model", getattr(model, "name_or_path", "") or "<in-memory>")
        self = cls.__new__(cls)
        Model.__init__(self, name, **args)
        if self.args.quantization:
            raise BackendError("from_objects cannot quantize an already-loaded model; load it quantized")
        if self.args.device != "auto":
            model.to(hf_load.resolve_device(self.args.device))
        if self.args.dtype != "auto":
            model.to(hf_load.resolve_dtype(self.args.dtype, model.device))
        self._attach(model, tokenizer)
        return self

    def _attach(self, model, tokenizer) -> None:
        import torch

        from sparring.models import hf_load
        from sparring.models.hf_score import TokenHealer

        self.model = hf_load.attach_adapters(model, self.args.adapters)
        self.base_model = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        self.tokenizer = tokenizer
        self.device = next(self.model.parameters()).device
        self.healer = TokenHealer(tokenizer)
        self.template = hf_load.chat_template(tokenizer, self.args.chat_template)
        self.max_context = hf_load.context_limit(self.base_model, tokenizer, self.args.max_context)
        self.eos_ids = set() if self.args.ignore_eos else hf_load.eos_ids(self.base_model, tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (min(self.eos_ids) if self.eos_ids else 0)
        peft_config = getattr(self.model, "peft_config", None)
        self.adapter_names = set(peft_config) if isinstance(peft_config, dict) else set()
        self._check_default_adapter(self.adapter_names)
        if self.args.compile:
            self.base_model.forward = torch.compile(self.base_model.forward, dynamic=True)
        from sparring.models.hf_prefix import PrefixCache

        self.kv_layers = self._plain_kv_layers()
        # each completion carries the decoder's last hidden state at its prompt's last token (set by
        # the online trainer for PPO: its values from the rollout, without a values pass)
        self.record_hidden = False
        self.prefix_cache = (PrefixCache(self.args.prefix_cache_mb * 2**20)
                             if self.kv_layers and self.args.prefix_cache_mb else None)
        if self.prefix_cache is not None and not self._prefix_cache_works():
            log.info("%s: the prefix cache gives different results with this model / transformers version; "
                     "running without it", self.name)
            self.prefix_cache = None
        self._watch_weights()

    def _prefix_cache_works(self) -> bool:
        """Checked at load: greedy generation and scores with the cache (a prompt extending a cached
        one) must equal the plain path's. A model or library version where the cache's use of
        transformers does not hold falls back to the plain path instead of returning wrong text."""
        from sparring.types import Sampling, ScoreRequest

        sampling = Sampling(max_new_tokens=3)
        first = [Message(role="user", content="Count on: one, two, three,")]
        longer = first + [Message(role="assistant", content="four, five"), Message(role="user", content="And on?")]
        reqs = [GenerateRequest(messages=m, sampling=sampling) for m in (first, longer)]
        score = ScoreRequest(messages=longer, options=[" six", " ten"])
        cache, self.prefix_cache = self.prefix_cache, None
        try:
            want, want_scores = self.generate(reqs), self.score([score])
            self.prefix_cache = cache
            self.generate(reqs[:1])  # fills the cache; the next calls extend what it holds
            got, got_scores = self.generate(reqs), self.score([score])
        except Exception as e:  # noqa: BLE001 — any failure means: do not use the cache
            log.debug("prefix cache check failed: %s: %s", type(e).__name__, e)
            return False
        finally:
            if cache is not None:
                cache.clear()
                cache.hits = cache.misses = 0
        same_text = [c[0].token_ids for c in got] == [c[0].token_ids for c in want]
        close = all(abs(a - b) <= 1e-3 for a, b in zip(got_scores[0], want_scores[0], strict=True))
        return same_text and close

    def _watch_weights(self) -> None:
        """Empty the prefix cache whenever the weights change: after any optimizer step (a trainer
        updating this model in this process) and after `load_state_dict`, through torch's public
        hooks (held weakly, removed by `close`)."""
        import weakref

        from torch.optim.optimizer import register_optimizer_step_post_hook

        me = weakref.ref(self)

        def changed(*_: Any) -> None:
            model = me()
            if model is not None:
                model.clear_prefix_cache()

        self._hooks = [register_optimizer_step_post_hook(changed),
                       self.model.register_load_state_dict_post_hook(changed)]

    def _plain_kv_layers(self) -> int | None:
        """The decoder layer count when the model keeps plain per-layer key/value states, which
        can be preallocated and spliced (not sliding-window, recurrent or encoder-decoder caches)."""
        try:
            from transformers import DynamicCache
            from transformers.cache_utils import DynamicLayer

            config = self.base_model.config
            layers = DynamicCache(config=config).layers
            plain = not config.is_encoder_decoder and all(type(layer) is DynamicLayer for layer in layers)
        except Exception:  # an architecture the cache utilities do not describe: do not guess
            return None
        return len(layers) if plain and layers else None

    def clear_prefix_cache(self) -> None:
        """Forget cached prompt states (done automatically when the weights change)."""
        if self.prefix_cache is not None:
            self.prefix_cache.clear()

    def _prefix(self, adapter: str):
        """The prefix cache for this call (None when disabled)."""
        from sparring.models.hf_prefix import PrefixContext

        if self.prefix_cache is None:
            return None
        assert self.kv_layers is not None  # a prefix cache exists only for plain key/value layers
        return PrefixContext(self.prefix_cache, adapter, self.args.max_batch_size, self.kv_layers)

    def close(self) -> None:
        """Drop this wrapper's references to the weights and cached states, and give the freed
        memory back (GPU cache; host pages glibc would otherwise keep, see `host_memory`)."""
        if getattr(self, "model", None) is not None:
            import torch

            from sparring.models.host_memory import release_freed_memory

            self.model = self.base_model = None
            self.clear_prefix_cache()
            for hook in getattr(self, "_hooks", []):
                hook.remove()
            self._hooks = []
            release_freed_memory()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    # -- helpers ------------------------------------------------------------------------------
    def _check_default_adapter(self, known: set[str]) -> None:
        if self.args.default_adapter not in (None, BASE_ADAPTER, *known):
            raise ConfigError(f"default_adapter {self.args.default_adapter!r} is not one of the adapters "
                              f"({', '.join(sorted(known)) or 'none loaded'}) or {BASE_ADAPTER!r}",
                              key="default_adapter")

    def prompt_text(self, messages: Sequence[Message], assistant_prefix: str = "") -> str:
        """The chat-templated prompt with the generation prompt and the assistant's prefix."""
        from sparring.models.chat import ChatTemplateError, render

        try:  # the rendering training uses too (templates without a system role included)
            text = render(self.tokenizer, self.template, messages, add_generation_prompt=True)
        except ChatTemplateError as exc:
            raise BackendError(f"model {self.name}: {exc}") from None
        return text + assistant_prefix

    def prompt_ids(self, messages: Sequence[Message], assistant_prefix: str = "", max_new_tokens: int = 1) -> list[int]:
        """The token ids `generate` feeds the model for this request (chat template, generation
        prompt, assistant prefix, context policy). A trainer scores the sampled tokens after exactly
        these, i.e. in the context they were sampled in (online GRPO). Same steps as `_generate`."""
        ids = self._tokenize([self.prompt_text(messages, assistant_prefix)])[0]
        return self._fit_prompt(0, ids, max_new_tokens)

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []

    def _resolve_adapter(self, adapter: str | None) -> str:
        name = adapter if adapter is not None else (self.args.default_adapter or BASE_ADAPTER)
        if name != BASE_ADAPTER and name not in self.adapter_names:
            raise UnknownNameError("adapter", name, [BASE_ADAPTER, *sorted(self.adapter_names)])
        return name

    @contextmanager
    def _adapter(self, name: str) -> Iterator[None]:
        if not self.adapter_names:
            yield
        elif name == BASE_ADAPTER:
            with self.model.disable_adapter():
                yield
        else:
            if self.model.active_adapter != name:  # PEFT's set_adapter unmerges a merged adapter
                self.model.set_adapter(name)
            yield

    @contextmanager
    def _inference(self) -> Iterator[None]:
        if self.model is None:
            raise BackendError(f"model {self.name} was closed")
        import torch

        from sparring.models.hf_attention import generation_attention

        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode(), generation_attention(self.device, self.args.cudnn_attention):
                yield
        finally:
            self.model.train(was_training)

    def _fit_prompt(self, index: int, ids: list[int], max_new_tokens: int) -> list[int]:
        """Apply the context policy: the prompt plus max_new_tokens must fit max_context."""
        if self.max_context is None or len(ids) + max_new_tokens <= self.max_context:
            return ids
        budget = self.max_context - max_new_tokens
        if self.args.truncation == "error" or budget < 1:
            raise ContextOverflowError(
                f"model {self.name}: request {index} has a {len(ids)}-token prompt; with max_new_tokens="
                f"{max_new_tokens} it needs {len(ids) + max_new_tokens} tokens but the context limit "
                f"(max_context) is {self.max_context}. Shorten the prompt, lower max_new_tokens"
                + (", or set truncation: left" if budget >= 1 else ""))
        return ids[-budget:]

    # -- backend hooks ------------------------------------------------------------------------
    def _generate(self, requests: list[GenerateRequest]) -> list[Any]:
        """One completion per request, or a ContextOverflowError for a prompt that does not fit."""
        from sparring.models.hf_generate import generate_batch

        adapters = [self._resolve_adapter(r.adapter) for r in requests]
        prompts = self._tokenize([self.prompt_text(r.messages, r.assistant_prefix) for r in requests])
        out: list[Any] = [None] * len(requests)
        for i, (ids, r) in enumerate(zip(prompts, requests, strict=True)):
            try:  # checked per row before batching: one prompt that does not fit fails alone
                prompts[i] = self._fit_prompt(i, ids, r.sampling.max_new_tokens)
            except ContextOverflowError as e:
                out[i] = e
        seeds = [r.sampling.seed if r.sampling.seed is not None else secrets.randbits(63) for r in requests]
        groups: dict[tuple, list[int]] = defaultdict(list)
        for i, r in enumerate(requests):
            if out[i] is None:
                groups[(r.sampling.group_key(), adapters[i])].append(i)
        with self._inference():
            for (_, adapter), members in groups.items():
                members.sort(key=lambda i: -len(prompts[i]))  # similar lengths -> less padding
                with self._adapter(adapter):
                    for pos in range(0, len(members), self.args.max_batch_size):
                        chunk = members[pos : pos + self.args.max_batch_size]
                        done = generate_batch(
                            self.model, self.base_model, self.tokenizer, [prompts[i] for i in chunk],
                            requests[chunk[0]].sampling, [seeds[i] for i in chunk], self.pad_id,
                            self.eos_ids, self.device, self._prefix(adapter), self.kv_layers,
                            hidden=self.record_hidden)
                        for i, completion in zip(chunk, done, strict=True):
                            out[i] = completion
        return out  # type: ignore[return-value]

    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        from sparring.models.hf_score import build_rows, score_rows

        adapters = [self._resolve_adapter(r.adapter) for r in requests]
        prompt_texts = [self.prompt_text(r.messages, r.assistant_prefix) for r in requests]
        prompt_ids = self._tokenize(prompt_texts)
        full_ids = self._tokenize([p + o for p, r in zip(prompt_texts, requests, strict=True) for o in r.options])
        by_adapter: dict[str, list[Row]] = defaultdict(list)
        pos = 0
        for i, r in enumerate(requests):
            options = full_ids[pos : pos + len(r.options)]
            pos += len(r.options)
            by_adapter[adapters[i]].extend(
                build_rows(i, prompt_ids[i], options, self.max_context, self.args.truncation, self.healer))
        scores = [[0.0] * len(r.options) for r in requests]
        with self._inference():
            for adapter, rows in by_adapter.items():
                with self._adapter(adapter):
                    sums = score_rows(self.model, self.base_model, rows, self.pad_id, self.device,
                                      self.args.max_batch_size, self._prefix(adapter), self.kv_layers)
                for row, value in zip(rows, sums, strict=True):
                    scores[row.target[0]][row.target[1]] += row.sign * value
        return scores
