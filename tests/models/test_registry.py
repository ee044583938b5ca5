"""Model specs registry (shipped + user files, aliases, strict validation) and the model pool."""

from __future__ import annotations

import importlib.util
import threading
import time

import pytest

from sparring.errors import ConfigError, UnknownNameError
from sparring.models.pool import ModelPool
from sparring.models.registry import (
    ENV_VAR,
    create_model,
    get_model_spec,
    load_model_specs,
    resolve_name,
    shipped_models_file,
)
from sparring.models.scripted import ScriptedModel
from sparring.models.spec import ModelSpec


@pytest.fixture(autouse=True)
def no_user_models(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_specs():
    specs = load_model_specs()
    smol = specs["smollm2-135m"]
    assert smol.backend == "hf" and smol.args["model"] == "bundled:smollm2-135m"
    assert smol.aliases == ["smol-135m"] and smol.metadata.params == "135M"
    assert smol.metadata.context_size == 8192 and smol.source == str(shipped_models_file())
    assert {"scripted-echo", "scripted-random", "gpt-4o-mini", "claude-haiku", "vllm-local",
            "llamacpp-local"} <= set(specs)
    assert specs["vllm-local"].args["base_url"] == "http://127.0.0.1:8000/v1"


USER = """
models:
  smollm2-135m:            # whole-entry override of the shipped spec
    backend: scripted
    args: {text: overridden}
  my-model:
    backend: scripted
    args: {mode: cycle, texts: [a, b]}
    sampling: {temperature: 0.3}
    aliases: [mine]
"""


def test_user_file_overrides_whole_entries(tmp_path):
    path = write(tmp_path, "user.yaml", USER)
    specs = load_model_specs(path)
    smol = specs["smollm2-135m"]
    assert smol.backend == "scripted" and smol.args == {"text": "overridden"}
    assert smol.aliases == [] and smol.metadata.params is None and smol.source == str(path)
    assert "gpt-4o-mini" in specs  # the rest of the shipped file stays
    assert get_model_spec("mine", specs).name == "my-model"
    # The override dropped the shipped alias along with the rest of the entry.
    with pytest.raises(UnknownNameError):
        resolve_name("smol-135m", specs)


def test_env_var_is_read_at_call_time_and_argument_wins(tmp_path, monkeypatch):
    first = write(tmp_path, "a.yaml", "models:\n  m1: {backend: scripted, args: {text: from-a}}\n")
    second = write(tmp_path, "b.yaml", "models:\n  m1: {backend: scripted, args: {text: from-b}}\n")
    monkeypatch.setenv(ENV_VAR, f"{first}:{second}")
    assert load_model_specs()["m1"].args["text"] == "from-b"  # later files win
    explicit = write(tmp_path, "c.yaml", "models:\n  m2: {backend: scripted}\n")
    specs = load_model_specs(explicit)
    assert "m2" in specs and "m1" not in specs
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="not found") as info:
        load_model_specs()
    assert ENV_VAR in str(info.value)


def test_alias_resolution_and_unknown_name_suggestions():
    specs = load_model_specs()
    assert get_model_spec("smol-135m", specs) is specs["smollm2-135m"]
    with pytest.raises(UnknownNameError) as info:
        get_model_spec("smollm2-136m", specs)
    assert "smollm2-135m" in str(info.value) and "Did you mean" in str(info.value)


def test_alias_collisions_name_both_files(tmp_path):
    path = write(tmp_path, "user.yaml", "models:\n  other: {backend: scripted, aliases: [smol-135m]}\n")
    with pytest.raises(ConfigError) as info:
        load_model_specs(path)
    msg = str(info.value)
    assert str(path) in msg and str(shipped_models_file()) in msg and "smol-135m" in msg
    path = write(tmp_path, "user2.yaml", "models:\n  other: {backend: scripted, aliases: [gpt-4o-mini]}\n")
    with pytest.raises(ConfigError, match="also model 'gpt-4o-mini'"):
        load_model_specs(path)


@pytest.mark.parametrize("text,key,fragment", [
    ("models:\n  bad: {backend: scripted, args: {mdoe: fixed}}\n", "models.bad.args.mdoe", "did you mean 'mode'"),
    ("models:\n  bad: {backend: scripted, args: {latency_s: -1}}\n", "models.bad.args.latency_s", "greater than"),
    ("models:\n  bad: {backend: scripted, args: {mode: cycle}}\n", "models.bad.args", "texts"),
    ("models:\n  bad: {backend: scripted, sampling: {temprature: 1}}\n", "models.bad.sampling.temprature",
     "did you mean 'temperature'"),
    ("models:\n  bad: {backend: scripted, metadata: {params: 1B, size: 3}}\n", "models.bad.metadata.size",
     "unknown key"),
    ("models:\n  bad: {args: {}}\n", "models.bad.backend", "required key is missing"),
    ("models:\n  bad: {backend: scripted, name: x}\n", "models.bad.name", "set by the loader"),
    ("models:\n  bad: [1, 2]\n", "models.bad", "expected a mapping"),
    ("model:\n  bad: {backend: scripted}\n", "model", "did you mean 'models'"),
])
def test_strict_validation_names_file_and_key(tmp_path, text, key, fragment):
    path = write(tmp_path, "user.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_model_specs(path)
    msg = str(info.value)
    assert str(path) in msg and key in msg and fragment in msg


def test_yaml_syntax_error_names_line(tmp_path):
    path = write(tmp_path, "user.yaml", "models:\n  bad: {backend: scripted\n")
    with pytest.raises(ConfigError, match="invalid YAML at line") as info:
        load_model_specs(path)
    assert str(path) in str(info.value)


def test_unknown_backend_lists_known_backends(tmp_path):
    path = write(tmp_path, "user.yaml", "models:\n  bad: {backend: scriptd}\n")
    spec = ModelSpec(name="bad", backend="scriptd", source=str(path))
    with pytest.raises(ConfigError, match="unknown backend 'scriptd'; known backends: .*scripted") as info:
        create_model(spec)
    assert str(path) in str(info.value) and "models.bad.backend" in str(info.value)
    from sparring.models.base import BACKENDS

    if not BACKENDS.import_errors():  # with every backend importable, loading already rejects it
        with pytest.raises(ConfigError, match="unknown backend 'scriptd'"):
            load_model_specs(path)


@pytest.mark.skipif(importlib.util.find_spec("sparring.models.hf") is None, reason="hf backend not present")
def test_hf_args_validated_without_loading(tmp_path):
    path = write(tmp_path, "user.yaml",
                 "models:\n  my-model: {backend: hf, args: {model: x, max_batch_size: lots}}\n")
    with pytest.raises(ConfigError, match=r"models\.my-model\.args\.max_batch_size") as info:
        load_model_specs(path)
    assert str(path) in str(info.value)


def test_create_model_from_name_and_spec():
    specs = load_model_specs()
    echo = create_model("scripted-echo", specs)
    assert isinstance(echo, ScriptedModel) and echo.name == "scripted-echo"
    bad = ModelSpec(name="oops", backend="scripted", args={"fail_every": 0}, source="my.yaml")
    with pytest.raises(ConfigError, match=r"my\.yaml.*models\.oops\.args\.fail_every"):
        create_model(bad)
    replay = ModelSpec(name="rp", backend="replay", source="my.yaml")
    with pytest.raises(ConfigError, match="my.yaml.*needs 'path'"):
        create_model(replay)
    built = create_model(replay, records=[{"instance_id": "q", "events": []}])
    assert built.name == "rp"


# -- pool -------------------------------------------------------------------------------------

class Closing(ScriptedModel):
    closed = 0

    def close(self) -> None:
        type(self).closed += 1


def pool_specs() -> dict[str, ModelSpec]:
    return {
        "judge": ModelSpec(name="judge", backend="scripted", aliases=["j", "referee"]),
        "debater": ModelSpec(name="debater", backend="scripted", args={"text": "hi"}),
    }


def test_pool_one_instance_per_spec_shared_by_aliases():
    built: list[str] = []

    def factory(spec: ModelSpec):
        built.append(spec.name)
        return Closing(name=spec.name, **spec.args)

    Closing.closed = 0
    pool = ModelPool(pool_specs(), factory=factory)
    assert pool.get("j") is pool.get("judge") is pool.get("referee")
    assert built == ["judge"]  # lazy: debater not loaded yet
    assert pool.get("debater").name == "debater" and built == ["judge", "debater"]
    assert "referee" in pool and "nobody" not in pool
    with pytest.raises(UnknownNameError, match="judge"):
        pool.get("judg")
    pool.close()
    assert Closing.closed == 2 and pool.loaded() == {}
    pool.close()  # idempotent
    assert Closing.closed == 2


def test_pool_get_is_thread_safe():
    built: list[str] = []

    def slow_factory(spec: ModelSpec):
        built.append(spec.name)
        time.sleep(0.05)
        return ScriptedModel(name=spec.name)

    pool = ModelPool(pool_specs(), factory=slow_factory)
    got: list = []
    threads = [threading.Thread(target=lambda n=n: got.append(pool.get(n)))
               for n in ["judge", "j", "referee", "debater"] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(built) == ["debater", "judge"]
    assert len({id(m) for m in got}) == 2


def test_pool_default_factory_and_injected_models():
    with ModelPool(load_model_specs()) as pool:
        echo = pool.get("scripted-echo")
        assert isinstance(echo, ScriptedModel)
        mock = ScriptedModel(name="mock")
        pool.add("mock", mock, aliases=["m"])
        assert pool.get("m") is mock and pool.resolve("m") == "mock"
        assert set(pool.loaded()) == {"scripted-echo", "mock"}


def test_an_inline_api_key_is_refused_naming_the_models_file_and_key(tmp_path):
    path = write(tmp_path, "user.yaml", "models:\n  x: {backend: openai, args: {model: m, api_key: sk-123456789abc}}\n")
    with pytest.raises(ConfigError) as info:
        load_model_specs(path)
    text = str(info.value)
    assert str(path) in text and "models.x.args.api_key" in text and "sk-123456789abc" not in text
