"""Shared pieces of the trainers' learning checks (`test_learning_checks*.py`): a tiny random model
that LoRA can teach, tasks with a known optimum, and the verdicts the checks assert (a verdict is
a value, so a negative control can assert that the same check fails).

Why not the plain tiny model of `sparring.models.tiny`: its stop token `<|im_end|>` is also the
padding token, so the random initialisation leaves its embedding row at zero, and with tied
embeddings its logit is 0 at every position. Full fine-tuning can move that row; LoRA (which
never touches the embeddings) cannot, so a LoRA run could never learn to end a reply (measured:
log p(<|im_end|>) stuck at -12 while the reply's words reached -0.1). Hidden size 64 also caps
how far one logit can rise above the other 49k (a memorised reply stayed near loss 0.5); at 128
four rows fit to loss ~0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HIDDEN = 128
SYSTEM = {"role": "system", "content": "Answer."}  # short: the template's default system text is 20 tokens


def small_tokenizer(vocab: int = 512) -> Any:
    """A byte-level BPE tokenizer of `vocab` tokens learnt from the offline checks' own chats, with
    the bundled tokenizer's special tokens and chat template. On a tiny model almost all of a
    trainer's step is the vocabulary: TRL's log-probabilities (and the loss's log-softmax) over the
    bundled tokenizer's 49,152 tokens cost ~100x those over 512. Byte-level: any text still
    encodes, and decodes back exactly."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from sparring.models.tiny import tiny_tokenizer

    bundled = tiny_tokenizer()
    chats = [row["messages"] for row in sft_rows()]
    chats += [row["prompt"] + row[side] for row in dpo_rows() for side in ("chosen", "rejected")]
    corpus = [bundled.apply_chat_template(chat, tokenize=False) for chat in chats]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=list(bundled.all_special_tokens), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    small = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bundled.bos_token, eos_token=bundled.eos_token,
                                    pad_token=bundled.pad_token, unk_token=bundled.unk_token)
    small.chat_template = bundled.chat_template
    return small


def learnable_tiny(directory: str | Path, seed: int = 0, sharpness: float = 1.0, small_vocab: bool = False) -> Path:
    """Save a tiny random Llama (hidden 128, the bundled tokenizer, or with `small_vocab` the
    checks' own 512-token one) whose stop token has a random embedding like every other token;
    returns the directory (a `model:` for every trainer). `sharpness` scales the final norm's
    weight, hence every logit: at 1 a sampled reply is spread over thousands of tokens (entropy
    ~8.3 nats), at 2 over tens."""
    import torch

    from sparring.models.tiny import tiny_model

    directory = Path(directory)
    if (directory / "config.json").is_file():
        return directory
    model, tokenizer = tiny_model(seed=seed, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                                  tokenizer=small_tokenizer() if small_vocab else None)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        model.get_input_embeddings().weight[tokenizer.eos_token_id] = torch.randn(HIDDEN, generator=generator) * 0.2
        model.model.norm.weight.mul_(sharpness)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def hf_args(model: str | Path) -> dict[str, Any]:
    """The `hf` backend's arguments for a model directory or a registry name (`smollm2-135m`)."""
    from sparring.train.policy import base_args

    return {k: v for k, v in base_args(str(model)).items() if k in ("model", "revision", "chat_template")}


def trained_model(model_dir: str | Path, trained: Path | None, name: str = "checked") -> Any:
    """The `hf` backend on what a run saved: a LoRA adapter on its base model, or (full
    fine-tuning, `lora: null`) the saved model itself; `trained` None: the base model."""
    from sparring.models.hf import HFModel

    if trained is None:
        return HFModel(name=name, **hf_args(model_dir))
    if not (Path(trained) / "adapter_config.json").is_file():
        return HFModel(name=name, model=str(trained))
    return HFModel(name=name, **hf_args(model_dir), adapters={"trained": str(trained)}, default_adapter="trained")


@dataclass
class Verdict:
    """What a learning check measured, and why it failed (no reasons: it passed)."""

    numbers: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def require(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)

    @property
    def passed(self) -> bool:
        return not self.failures

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={v:.4g}" for k, v in self.numbers.items())
        return f"{'passed' if self.passed else 'FAILED: ' + '; '.join(self.failures)} ({shown})"


def train_settings(tiny: str | Path, **kwargs: Any) -> Any:
    """The checks' `TrainSettings`: LoRA (the default r=8), a constant rate, no checkpoints."""
    from sparring.train.config import TrainSettings

    base = {"model": str(tiny), "max_length": 128, "save_steps": 0, "lr_scheduler_type": "constant"}
    return TrainSettings(**{**base, **kwargs})


# -- SFT: memorise four rows ---------------------------------------------------------------------
ANIMALS = {"forest": "red fox", "ocean": "blue whale", "pond": "green frog", "house": "black cat"}


def sft_rows() -> list[dict[str, Any]]:
    """Four rows whose reply depends on one word of the prompt."""
    return [{"messages": [SYSTEM, {"role": "user", "content": f"Which animal lives in the {place}?"},
                          {"role": "assistant", "content": reply}]} for place, reply in ANIMALS.items()]


def token_nll(model_dir: Path, adapter: Path | None, rows: list[dict[str, Any]]) -> tuple[float, float]:
    """(mean NLL of the reply tokens, mean NLL of every other predicted token) over `rows`, under
    the base model with `adapter` (None: the base alone). The reply tokens are sparring's own
    assistant mask (`masks.mask_chat`), computed here and not by the trainer under test."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sparring.train.masks import mask_chat

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    full = adapter is not None and not (adapter / "adapter_config.json").is_file()  # full fine-tuning saved a model
    model: Any = AutoModelForCausalLM.from_pretrained(adapter if full else model_dir)
    if adapter is not None and not full:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter))
    model.eval()
    sums, counts = [0.0, 0.0], [0, 0]
    with torch.no_grad():
        for row in rows:
            chat = mask_chat(tokenizer, row["messages"], template=tokenizer.chat_template)
            ids = torch.tensor([chat.input_ids])
            logps = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
            nll = -logps.gather(1, ids[0, 1:, None])[:, 0]
            for value, trained in zip(nll.tolist(), chat.assistant_masks[1:], strict=True):
                sums[1 - trained] += value
                counts[1 - trained] += 1
    return sums[0] / counts[0], sums[1] / counts[1]


def greedy_replies(model_dir: Path, adapter: Path, rows: list[dict[str, Any]]) -> list[str]:
    """What the trained adapter answers to each row's prompt, greedily, through the `hf` backend
    (the way a trained adapter is played)."""
    from sparring.types import GenerateRequest, Message, Sampling

    model = trained_model(model_dir, adapter)
    try:
        requests = [GenerateRequest(messages=[Message(**m) for m in row["messages"][:-1]],
                                    sampling=Sampling(temperature=0.0, max_new_tokens=8)) for row in rows]
        return [out[0].text for out in model.generate(requests)]
    finally:
        model.close()


def sft_verdict(model_dir: Path, adapter: Path, rows: list[dict[str, Any]]) -> Verdict:
    """SFT memorised its rows, and only their replies: the reply tokens' NLL fell below a tenth of
    its start, greedy decoding reproduces every reply, and the other tokens' NLL stayed within 20%
    of its start (a trainer with loss on the prompt drives that down too)."""
    reply_before, prompt_before = token_nll(model_dir, None, rows)
    reply_after, prompt_after = token_nll(model_dir, adapter, rows)
    replies = greedy_replies(model_dir, adapter, rows)
    right = sum(got.strip() == row["messages"][-1]["content"] for got, row in zip(replies, rows, strict=True))
    v = Verdict({"reply_nll_before": reply_before, "reply_nll_after": reply_after,
                 "prompt_nll_before": prompt_before, "prompt_nll_after": prompt_after,
                 "greedy_reproduced": right / len(rows)})
    v.require(reply_after < 0.1 * reply_before, "the replies' NLL did not fall below a tenth of its start")
    v.require(right == len(rows), f"greedy decoding reproduced {right} of {len(rows)} replies: {replies}")
    v.require(prompt_after > 0.8 * prompt_before, "the prompt tokens' NLL fell: the prompt carried loss")
    return v


SFT_CHECK = {"learning_rate": 1e-2, "max_steps": 30}


def check_sft(tiny: Path, out: Path, **overrides: Any) -> Verdict:
    """Train SFT on `sft_rows()` through `train()` and judge it (`overrides`: e.g. learning_rate)."""
    from sparring.train.trainers import train

    rows = sft_rows()
    result = train(rows, train_settings(tiny, method="sft", batch_size=len(rows), **{**SFT_CHECK, **overrides}), out)
    return sft_verdict(tiny, result.adapter, rows)


# -- preference trainers: 16 pairs whose preferred reply depends on the prompt ----------------------
WORDS = ["apple", "river", "stone", "cloud", "tiger", "piano", "bread", "chair", "ocean", "lemon", "house",
         "candle", "garden", "silver", "window", "forest"]
PAIRS = len(WORDS)


def pair_prompt(i: int) -> list[dict[str, str]]:
    return [SYSTEM, {"role": "user", "content": f"Do you keep the word {WORDS[i]}?"}]


def truth(i: int) -> tuple[str, str]:
    """(right, wrong) reply to `pair_prompt(i)`: half the pairs prefer each reply, so no bias
    towards one reply fits them; the trainer has to tell the prompts apart."""
    yes, no = "Yes, I keep it.", "No, I drop it."
    return (yes, no) if i % 2 == 0 else (no, yes)


def dpo_rows(preference: float = 1.0) -> list[dict[str, Any]]:
    return [{"prompt": pair_prompt(i), "chosen": [{"role": "assistant", "content": truth(i)[0]}],
             "rejected": [{"role": "assistant", "content": truth(i)[1]}], "preference": preference}
            for i in range(PAIRS)]


def kto_rows(prompts: int = PAIRS // 2) -> list[dict[str, Any]]:
    """16 rows: each of 8 prompts twice, its right reply labelled desirable, its wrong one undesirable."""
    return [{"prompt": pair_prompt(i), "completion": [{"role": "assistant", "content": reply}], "label": label}
            for i in range(prompts) for reply, label in zip(truth(i), (True, False), strict=True)]


def pair_margins(model_dir: str | Path, adapter: Path, pairs: int = PAIRS) -> list[float]:
    """Per pair, the trained adapter's implicit reward margin against the base model (the
    reference): [log π(right) − log π_ref(right)] − [log π(wrong) − log π_ref(wrong)], scored by
    the `hf` backend on what the run saved."""
    from sparring.types import Message, ScoreRequest

    requests = [ScoreRequest(messages=[Message(**m) for m in pair_prompt(i)], options=list(truth(i)))
                for i in range(pairs)]
    scores = []
    for saved in (adapter, None):
        model = trained_model(model_dir, saved)
        try:
            scores.append(model.score(requests))
        finally:
            model.close()
    trained, base = scores
    return [(t[0] - b[0]) - (t[1] - b[1]) for t, b in zip(trained, base, strict=True)]


def entropy(p: float) -> float:
    """The soft-preference loss's floor for target p (nats): no policy goes below it."""
    return 0.0 if p in (0.0, 1.0) else -(p * math.log(p) + (1 - p) * math.log(1 - p))


def preference_verdict(model_dir: str | Path, result: Any, start: float | None, floor: float = 0.0,
                       closed: float = 0.5, pairs: int = PAIRS, chosen_rises: bool = False) -> Verdict:
    """A preference trainer fitted its own pairs: the saved adapter ranks the right reply above the
    wrong one in >= 90% of the pairs, the last logged loss closed at least `closed` of the gap
    between its start value (None: the first logged step's loss, for losses with an NLL term) and
    its floor, and the logged `rewards/margins` (TRL's DPO and KTO, the soft loss) is positive.
    `chosen_rises`: for the losses built to hold the chosen reply up (RPO, APO-zero, DPO-Positive),
    the logged `rewards/chosen` is positive too."""
    start = result.first_metrics["loss"] if start is None else start
    margins = pair_margins(model_dir, result.adapter, pairs)
    accuracy = sum(m > 0 for m in margins) / len(margins)
    m = result.metrics
    loss = m["loss"]
    logged_margin = m["rewards/margins"]
    v = Verdict({"accuracy": accuracy, "loss_start": start, "loss": loss, "floor": floor,
                 "logged_margin": logged_margin, "logged_accuracy": m.get("rewards/accuracies", math.nan)})
    v.require(accuracy >= 0.9, f"the right reply won {accuracy:.2f} of the pairs (< 0.9)")
    v.require(loss <= start - closed * (start - floor),
              f"loss {loss:.4g} closed less than {closed:.0%} of the gap from its start {start:.4g} to its floor "
              f"{floor:.4g}")
    v.require(logged_margin > 0, "the logged reward margin is not positive")
    if chosen_rises:
        v.numbers["logged_chosen"] = m["rewards/chosen"]
        v.require(m["rewards/chosen"] > 0, f"the chosen reply fell (logged rewards/chosen {m['rewards/chosen']:.3g})")
    return v


# name -> (loss settings, learning rate, steps, loss at the start, floor, target p of the rows)
PREFERENCE: dict[str, tuple[dict[str, Any], float, int, float, float, float]] = {
    "dpo": ({"method": "dpo", "dpo": {"loss_type": ["sigmoid"], "beta": 0.1}}, 1e-2, 12, math.log(2), 0.0, 1.0),
    "ipo": ({"method": "dpo", "dpo": {"loss_type": ["ipo"], "beta": 0.5}}, 1e-3, 8, (1 / (2 * 0.5)) ** 2, 0.0, 1.0),
    # beta 1: length normalisation divides beta by the reply length (~5 tokens), and the optimum
    # sigma(beta x per-token gap) = p needs a per-token log-ratio gap of logit(p) / beta
    "soft": ({"method": "dpo", "dpo": {"soft": True, "beta": 1.0}}, 1e-3, 8, math.log(2), entropy(0.8), 0.8),
    "kto": ({"method": "kto", "kto": {"beta": 0.1}}, 1e-2, 8, 0.5, 0.0, 1.0),
    # the losses that hold the chosen reply up (the check also wants logged rewards/chosen > 0);
    # start None: the first logged loss (an NLL term has no start known in advance)
    "rpo": ({"method": "dpo", "dpo": {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 1.0], "beta": 0.1}},
            1e-2, 12, None, 0.0, 1.0),
    "apo_zero": ({"method": "dpo", "dpo": {"loss_type": ["apo_zero"], "beta": 0.1}}, 1e-2, 12, 1.0, 0.0, 1.0),
    # NYU's smoothed DPO: the soft target and an NLL weight on the chosen reply (its floor is above
    # entropy(0.8) by the NLL it cannot remove: the check's floor is a lower bound). Rates from a sweep
    # (2026-12-02, lr 1e-3 / 3e-3 / 1e-2 x 8 / 12 steps): smoothed and DPOP pass at 3e-3 and 1e-2
    # with 8 steps, at 1e-3 DPOP needs 12 and smoothed closes 25-40% of its gap
    "smoothed": ({"method": "dpo", "dpo": {"soft": True, "beta": 1.0, "sft_weight": 0.2}}, 3e-3, 8, None,
                 entropy(0.8), 0.8),
    "dpop": ({"method": "dpo", "dpo": {"soft": True, "beta": 1.0, "positive": 5.0}}, 3e-3, 8, math.log(2), 0.0, 1.0),
}
HOLDS_CHOSEN = ("rpo", "apo_zero", "dpop")


def check_preference(tiny: str | Path, out: Path, name: str, **overrides: Any) -> tuple[Verdict, Any]:
    """Train one preference loss of `PREFERENCE` on its 16 pairs (full batch) through `train()`
    and judge it; returns the verdict and the trainer's result."""
    from sparring.train.trainers import train

    loss, lr, steps, start, floor, p = PREFERENCE[name]
    rows = kto_rows() if name == "kto" else dpo_rows(preference=p)
    chosen = {"learning_rate": lr, "max_steps": steps, **overrides}
    result = train(rows, train_settings(tiny, batch_size=len(rows), **loss, **chosen), out)
    pairs = len(rows) // 2 if name == "kto" else len(rows)
    return preference_verdict(tiny, result, start, floor, pairs=pairs, chosen_rises=name in HOLDS_CHOSEN), result
