"""The tiny models' cut tokenizer (`tiny_model(vocab=N)`): the bundled tokenizer's first N ids,
with its chat template and special tokens; every text still encodes and decodes back."""

from __future__ import annotations

import pytest

from sparring.models.tiny import MIN_VOCAB, tiny_model, tiny_tokenizer

CHAT = [{"role": "system", "content": "You argue for an answer."},
        {"role": "user", "content": "The story says: <quote>Zoë paid 12 € — 你好</quote>. Which answer?"}]


def test_a_cut_tokenizer_keeps_the_template_and_special_tokens_and_encodes_every_text():
    full, cut = tiny_tokenizer(), tiny_tokenizer(vocab=1024)
    assert len(cut) == 1024 and len(full) > 40_000
    text = full.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
    assert cut.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True) == text
    ids = cut(text)["input_ids"]
    assert max(ids) < 1024 and cut.decode(ids) == text  # every byte is a token: nothing is lost
    assert len(ids) > len(full(text)["input_ids"])  # only into more tokens
    for name in ("eos_token", "pad_token", "bos_token"):
        assert getattr(cut, name) == getattr(full, name) and getattr(cut, name + "_id") == getattr(full, name + "_id")
    assert cut.convert_ids_to_tokens(cut("<|im_start|>")["input_ids"]) == ["<|im_start|>"]


def test_a_tiny_model_on_a_cut_vocabulary_is_sized_by_it_and_the_cut_is_bounded():
    model, tok = tiny_model(vocab=512)
    assert model.get_input_embeddings().weight.shape[0] == len(tok) == 512
    with pytest.raises(ValueError, match="a cut tokenizer keeps between"):
        tiny_tokenizer(vocab=MIN_VOCAB - 1)
