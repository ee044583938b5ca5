"""Assistant-only loss for any chat template: for Llama 3, Qwen2.5, Qwen3 (think tags), Mistral
([INST]), Gemma (no system role), Phi-3, Phi-4 and a base model without a template, the trained
tokens decode exactly to the assistant replies as the family renders them plus their end-of-turn
token, and nothing else; SFT rows, DPO pairs and KTO rows reach TRL with exactly those tokens; a
template that cannot be aligned is a clear error naming the model."""

from __future__ import annotations

import pytest

from sparring.models.chat import render
from sparring.models.hf_load import chat_template
from sparring.train.masks import AlignmentError, mask_chat, pair_ids

from .chat_families import END, REPLY, TEMPLATES, family_tokenizer

FAMILIES = list(TEMPLATES)
REASONED = "<think>\nThe books are worth more to me.\n</think>\n\n[propose] (2 books, 0 hats, 1 balls)"
CHAT = [
    {"role": "system", "content": "You negotiate over books, hats and balls."},
    {"role": "user", "content": "Partner: I want the hats."},
    {"role": "assistant", "content": "[message] Take the hats, I keep the books."},
    {"role": "user", "content": "Partner: fine, and the ball?"},
    {"role": "user", "content": "Game: make your proposal."},  # two user messages in a row
    {"role": "assistant", "content": REASONED},
]


@pytest.fixture(scope="module")
def bundled():
    from sparring.models.tiny import tiny_tokenizer

    return tiny_tokenizer()


def runs(ids: list[int], mask: list[int]) -> list[list[int]]:
    """The maximal runs of masked tokens."""
    out: list[list[int]] = []
    prev = 0
    for t, m in zip(ids, mask, strict=True):
        if m and not prev:
            out.append([])
        if m:
            out[-1].append(t)
        prev = m
    return out


def template_of(tok):
    return chat_template(tok, None)  # the tokenizer's own, or the plain one for a base model (as training)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_trained_tokens_are_exactly_the_replies_and_their_end_of_turn_token(bundled, family):
    tok = family_tokenizer(family, bundled)
    template = template_of(tok)
    chat = mask_chat(tok, CHAT, template=template)
    trained = [tok.decode(r) for r in runs(chat.input_ids, chat.assistant_masks)]
    reply = REPLY[family]
    assert trained == [reply(CHAT[2]["content"], False) + END[family], reply(REASONED, True) + END[family]]
    # the untrained tokens are the rest of the rendered conversation, nothing lost or added
    assert tok.decode(chat.input_ids) == chat.text == render(tok, template, CHAT, add_generation_prompt=False)
    assert chat.text.count(END[family]) >= 2


def test_qwen3_trains_the_last_reply_with_its_reasoning_and_earlier_ones_as_the_template_keeps_them(bundled):
    tok = family_tokenizer("qwen3", bundled)
    chat = mask_chat(tok, CHAT)
    _, last = (tok.decode(r) for r in runs(chat.input_ids, chat.assistant_masks))
    assert last == REASONED + "<|im_end|>"  # <think>...</think> is the model's own output
    earlier = [*CHAT[:2], {"role": "assistant", "content": REASONED}, *CHAT[3:]]
    chat = mask_chat(tok, earlier)
    first, _ = (tok.decode(r) for r in runs(chat.input_ids, chat.assistant_masks))
    assert first == "[propose] (2 books, 0 hats, 1 balls)<|im_end|>"  # the template drops old reasoning


@pytest.mark.parametrize("family", FAMILIES)
def test_only_the_chosen_turns_train(bundled, family):
    tok = family_tokenizer(family, bundled)
    chat = mask_chat(tok, CHAT, trained=[5], template=template_of(tok))
    (only,) = runs(chat.input_ids, chat.assistant_masks)
    assert tok.decode(only) == REPLY[family](REASONED, True) + END[family]


@pytest.mark.parametrize("family", FAMILIES)
def test_a_preference_row_is_the_prompt_as_prompted_then_the_reply_as_trained(bundled, family):
    tok = family_tokenizer(family, bundled)
    template = template_of(tok)
    prompt, reply = CHAT[:5], [CHAT[5]]
    prompt_ids, reply_ids = pair_ids(tok, prompt, reply, template)
    assert tok.decode(prompt_ids) == render(tok, template, prompt, add_generation_prompt=True)
    assert tok.decode(reply_ids) == REPLY[family](REASONED, True) + END[family]


def test_a_template_without_a_system_role_gets_the_system_text_in_the_first_user_turn(bundled):
    tok = family_tokenizer("gemma", bundled)
    text = render(tok, tok.chat_template, CHAT[:5], add_generation_prompt=True)
    assert text.startswith("<bos><start_of_turn>user\nYou negotiate over books, hats and balls.\n\nPartner: I want")
    assert "Partner: fine, and the ball?\n\nGame: make your proposal.<end_of_turn>" in text  # runs joined
    assert text.endswith("<start_of_turn>model\n")


def test_the_hf_backend_prompts_with_the_same_rendering(bundled):
    """Play and training render through one function: the backend's prompt is the training prompt."""
    from sparring.models.hf import HFModel
    from sparring.models.tiny import tiny_model
    from sparring.types import Message

    model, _ = tiny_model(vocab=1024)
    tok = family_tokenizer("gemma", bundled)
    hf = HFModel.from_objects(model, tok, name="gemma-like")
    messages = [Message(**m) for m in CHAT[:5]]
    prompt_ids, _ = pair_ids(tok, CHAT[:5], [CHAT[5]])
    assert hf.prompt_ids(messages) == prompt_ids


def test_a_template_that_rewrites_earlier_turns_is_an_error_naming_the_model(bundled):
    tok = family_tokenizer("qwen2.5", bundled)
    tok.name_or_path = "acme/rewriter-7b"
    # the number of messages in the header: the prompt is never a prefix of the longer conversation
    tok.chat_template = ("{{ messages | length }} turns\n" + TEMPLATES["qwen2.5"])
    with pytest.raises(AlignmentError, match="acme/rewriter-7b.*differently"):
        mask_chat(tok, CHAT[:3])


def test_a_template_that_never_closes_a_reply_is_an_error(bundled):
    tok = family_tokenizer("base", bundled)
    tok.name_or_path = "acme/base"
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}" \
               "{% if add_generation_prompt %}assistant: {% endif %}"
    with pytest.raises(AlignmentError, match="acme/base.*no special token"):
        mask_chat(tok, CHAT[1:3], template=template)


def test_the_plain_template_of_a_base_model_closes_replies_with_the_end_of_sequence_token(bundled):
    tok = family_tokenizer("base", bundled)
    text = render(tok, template_of(tok), CHAT[1:3], add_generation_prompt=False)
    assert text == ("user: Partner: I want the hats.\n\nassistant: [message] Take the hats, I keep the books."
                    f"{tok.eos_token}\n\n")


@pytest.mark.parametrize("family", ["llama3", "gemma"])
def test_sft_and_dpo_hand_trl_exactly_these_tokens(tmp_path, bundled, family):
    """What TRL trains on: the SFT collator's labels are the masked tokens; DPO's chosen/rejected
    ids are the replies and their end-of-turn token (sparring's ids replace TRL's own)."""
    from trl import DPOConfig, DPOTrainer, SFTConfig, SFTTrainer

    from sparring.models.tiny import tiny_model
    from sparring.train.config import TrainSettings
    from sparring.train.policy import lora_config
    from sparring.train.trainers import _dataset, preference_tokens, sft_example, use_our_tokens

    tok = family_tokenizer(family, bundled)
    model, _ = tiny_model(vocab=1024)
    model.resize_token_embeddings(len(tok))
    example = sft_example(tok, {"messages": CHAT})
    settings = TrainSettings(model="unused", max_steps=1)
    common = {"output_dir": str(tmp_path), "use_cpu": True, "bf16": False, "report_to": "none", "max_length": 512}
    sft = SFTTrainer(model=model, args=SFTConfig(**common), processing_class=tok, peft_config=lora_config(settings),
                     train_dataset=_dataset([example], ("input_ids", "assistant_masks")))
    labels = sft.data_collator([sft.train_dataset[0]])["labels"][0].tolist()
    trained = runs(labels, [int(t != -100) for t in labels])
    assert [tok.decode(r) for r in trained] == [REPLY[family](CHAT[2]["content"], False) + END[family],
                                                REPLY[family](REASONED, True) + END[family]]
    row = {"prompt": CHAT[:5], "chosen": [CHAT[5]], "rejected": [{"role": "assistant", "content": "no deal"}]}
    rows, tokens = preference_tokens(tok, [row, row], ("chosen", "rejected"))
    dpo = DPOTrainer(model=model, args=DPOConfig(**common), processing_class=tok, peft_config=lora_config(settings),
                     train_dataset=_dataset(rows, ("prompt", "chosen", "rejected")))
    use_our_tokens(dpo, tokens)
    first = dpo.train_dataset[0]
    assert tok.decode(first["chosen_ids"]) == REPLY[family](REASONED, True) + END[family]
    assert tok.decode(first["rejected_ids"]) == REPLY[family]("no deal", True) + END[family]
    assert tok.decode(first["prompt_ids"]) == render(tok, tok.chat_template, CHAT[:5], add_generation_prompt=True)
