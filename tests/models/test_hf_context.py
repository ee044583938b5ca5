"""Context limits, argument validation and clear errors of the `hf` backend."""

from __future__ import annotations

import pydantic
import pytest

from sparring.errors import ConfigError, ContextOverflowError
from sparring.models.hf import HFModel
from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

LONG = "word " * 200


def req(text: str, max_new_tokens: int = 8) -> GenerateRequest:
    return GenerateRequest(messages=[Message(role="user", content=text)],
                           sampling=Sampling(max_new_tokens=max_new_tokens))


def test_context_overflow_error_names_lengths(tiny_objects):
    model = HFModel.from_objects(*tiny_objects, name="tiny-ctx", max_context=128)
    n = len(model._tokenize([model.prompt_text([Message(role="user", content=LONG)])])[0])
    short, too_long = model.generate([req("short"), req(LONG)])  # one bad row fails alone
    assert short[0].text is not None and isinstance(too_long, ContextOverflowError)
    message = str(too_long)
    assert f"{n}-token prompt" in message and "max_context) is 128" in message and "tiny-ctx" in message
    assert "request 1" in message and "truncation: left" in message
    # the prompt alone fits but not with the tokens to generate
    fits = len(model._tokenize([model.prompt_text([Message(role="user", content="word " * 60)])])[0])
    assert fits < 128
    with pytest.raises(ContextOverflowError, match="max_new_tokens=100"):
        model.generate([req("word " * 60, max_new_tokens=100)])
    with pytest.raises(ContextOverflowError, match="more than the model's context limit"):
        model.score([ScoreRequest(messages=[Message(role="user", content=LONG)], options=["A"])])


def test_left_truncation_keeps_the_end_and_generates(tiny_objects):
    model = HFModel.from_objects(*tiny_objects, max_context=128, truncation="left")
    completion = model.generate([req(LONG, max_new_tokens=8)])[0][0]
    assert completion.usage.prompt_tokens == 120
    assert len(completion.token_ids) == 8
    # identical to generating from the last 120 prompt tokens directly
    ids = model._tokenize([model.prompt_text([Message(role="user", content=LONG)])])[0][-120:]
    from sparring.models.hf_generate import generate_batch

    direct = generate_batch(model.model, model.base_model, model.tokenizer, [ids], Sampling(max_new_tokens=8),
                            [0], model.pad_id, model.eos_ids, model.device)[0]
    assert direct.token_ids == completion.token_ids
    scores = model.score([ScoreRequest(messages=[Message(role="user", content=LONG)], options=["A", "B"])])[0]
    assert len(scores) == 2 and all(s < 0 for s in scores)
    with pytest.raises(ContextOverflowError, match="Shorten the prompt, lower max_new_tokens"):
        model.generate([req("hi", max_new_tokens=200)])  # nothing of the prompt would fit


def test_default_context_comes_from_the_model(tiny_hf):
    assert tiny_hf.max_context == 2048


def test_quantization_on_cpu_is_a_clear_error(tiny_model_dir):
    with pytest.raises(ConfigError, match="quantization.*CUDA device") as err:
        HFModel(model=str(tiny_model_dir), device="cpu", quantization="4bit")
    assert err.value.key == "quantization"


def test_bad_arguments_are_rejected(tiny_model_dir, tmp_path, monkeypatch):
    with pytest.raises(pydantic.ValidationError, match="max_batch_sise"):
        HFModel(model=str(tiny_model_dir), max_batch_sise=4)
    with pytest.raises(pydantic.ValidationError, match="reserved"):
        HFModel(model=str(tiny_model_dir), adapters={"base": str(tmp_path)})
    with pytest.raises(ConfigError, match="default_adapter 'x' is not one of"):
        HFModel(model=str(tiny_model_dir), default_adapter="x")
    with pytest.raises(ConfigError, match="does not exist") as err:
        HFModel(model=str(tmp_path / "missing"))
    assert err.value.key == "model"
    monkeypatch.setenv("SPARRING_OFFLINE", "1")
    with pytest.raises(ConfigError, match=r"'some-org/not-downloaded-model' is not in the local Hugging Face cache "
                                          r"\(.*\) and sparring is offline \(SPARRING_OFFLINE=1\).*hf download"):
        HFModel(model="some-org/not-downloaded-model")
    monkeypatch.delenv("SPARRING_OFFLINE")
    with pytest.raises(ConfigError, match="no adapter_config.json") as err:
        HFModel(model=str(tiny_model_dir), adapters={"a": str(tmp_path)})
    assert err.value.key == "adapters.a"
    with pytest.raises(ConfigError, match="CUDA is not available"):
        HFModel(model=str(tiny_model_dir), device="cuda")


def test_loading_a_directory_leaves_the_environment_alone(tiny_model_dir, monkeypatch):
    import os

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    HFModel(model=str(tiny_model_dir))
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["TRANSFORMERS_OFFLINE"] == "0"


def test_chat_template_override(tiny_objects, tmp_path):
    template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}[assistant] "
    model = HFModel.from_objects(*tiny_objects, chat_template=template)
    assert model.prompt_text([Message(role="user", content="hi")], "ok") == "[user] hi\n[assistant] ok"
    path = tmp_path / "t.jinja"
    path.write_text(template)
    from_file = HFModel.from_objects(*tiny_objects, chat_template=str(path))
    assert from_file.prompt_text([Message(role="user", content="hi")]) == "[user] hi\n[assistant] "
    with pytest.raises(ConfigError, match="neither a Jinja template nor an existing file"):
        HFModel.from_objects(*tiny_objects, chat_template="no-such-file.jinja")
