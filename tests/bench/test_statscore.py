"""The statscore: static tasks of a suite run by lm-evaluation-harness. Fast tests check the config
(strict keys, task files with their data beside them), the figures read from an lm-eval result and
the mean over tasks; the end-to-end ones (bundled model, `lm_eval` installed) run the shipped local
task, a trained-looking adapter, an unreachable dataset and `sparring bench` itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sparring.config_io import validate
from sparring.errors import ConfigError
from sparring.evaluation.static_tasks import StaticTask, Statscore, task_config
from sparring.evaluation.statscore import StaticTaskError, summarize, task_figures
from sparring.evaluation.suite import load_suite

STATIC = Path(__file__).resolve().parents[2] / "sparring" / "configs" / "bench" / "static"
FACTS_N = sum(1 for line in (STATIC / "facts.jsonl").read_text().splitlines() if line.strip())


def test_statscore_block_is_strict_and_names_the_key():
    with pytest.raises(ConfigError) as e:
        validate(Statscore, {"tasks": {"facts": {"task": "x", "metrc": "acc"}}}, file="s.yaml")
    assert "tasks.facts.metrc" in str(e.value) and "s.yaml" in str(e.value)


def test_shipped_suites_name_their_static_tasks():
    quick, _ = load_suite("bench-quickstart")
    assert quick.statscore is not None and list(quick.statscore.tasks) == ["facts"]
    full, _ = load_suite("suite")
    assert full.statscore is not None
    tasks = full.statscore.tasks
    assert set(tasks) == {"cladder", "eq_bench", "ifeval", "mmlu_pro"}  # Playpen's static_1.0
    assert (tasks["eq_bench"].metric, tasks["eq_bench"].scale) == ("eqbench", 1.0)
    assert (tasks["mmlu_pro"].metric, tasks["mmlu_pro"].filter) == ("exact_match", "custom-extract")
    assert tasks["ifeval"].metric == "prompt_level_strict_acc"


def test_a_task_file_reads_its_data_next_to_it(tmp_path: Path):
    cfg = task_config(StaticTask(task="sparring_facts", file="static/facts.yaml"), STATIC.parent, "facts")
    assert isinstance(cfg, dict)
    data = cfg["dataset_kwargs"]["data_files"]["test"]
    assert Path(data).is_absolute() and Path(data) == (STATIC / "facts.jsonl").resolve()
    with pytest.raises(ConfigError, match="asks for 'other'"):
        task_config(StaticTask(task="other", file="static/facts.yaml"), STATIC.parent, "facts")
    with pytest.raises(ConfigError, match="not found"):
        task_config(StaticTask(task="x", file="nowhere.yaml"), tmp_path, "x")
    assert task_config(StaticTask(task="ifeval"), tmp_path, "ifeval") == "ifeval"


def _result(values: list[float], metric: str = "acc") -> dict:
    return {"results": {"t": {f"{metric},none": sum(values) / len(values), f"{metric}_stderr,none": 0.1}},
            "n-samples": {"t": {"original": 50, "effective": len(values)}},
            "samples": {"t": [{"doc_id": i, "filter": "none", metric: v} for i, v in enumerate(values)]},
            "configs": {"t": {"dataset_path": "json"}}, "n-shot": {"t": 0}}


def test_task_figures_scale_count_and_keep_per_document_values():
    figures, items = task_figures(_result([1.0, 0.0, 1.0, 1.0]), StaticTask(task="t", metric="acc"), "k")
    assert figures["score"] == pytest.approx(75.0) and figures["n"] == 4 and figures["value"] == 0.75
    assert items == {"0": 100.0, "1": 0.0, "2": 100.0, "3": 100.0}
    assert 0.0 <= figures["ci"][0] <= 75.0 <= figures["ci"][1] <= 100.0
    with pytest.raises(StaticTaskError, match="no metric 'f1'"):
        task_figures(_result([1.0]), StaticTask(task="t", metric="f1"), "k")


def test_statscore_is_the_mean_of_the_tasks_that_ran_never_a_zero_for_a_failed_one():
    tasks = {"a": {"status": "ok", "score": 80.0}, "b": {"status": "ok", "score": 40.0},
             "c": {"status": "error", "error": "dataset unreachable"}}
    items = {"a": {"0": 100.0, "1": 60.0}, "b": {"0": 40.0, "1": 40.0}}
    out = summarize(tasks, items)
    assert out["statscore"] == pytest.approx(60.0) and out["scored"] == ["a", "b"] and out["missing"] == ["c"]
    assert out["ci"][0] <= 60.0 <= out["ci"][1]
    assert math.isnan(summarize({"c": tasks["c"]}, {})["statscore"])


def test_bench_says_plainly_when_lm_eval_is_missing(monkeypatch, tmp_path: Path):
    from rich.console import Console

    from sparring.evaluation import bench_static, statscore

    monkeypatch.setattr(statscore.importlib.util, "find_spec", lambda name: None)
    suite, path = load_suite("bench-quickstart")
    console = Console(record=True, width=200)
    data = bench_static.run_static(suite, path, ["smollm2-135m"], {}, tmp_path, console=console)
    assert data is not None and data["status"] == "skipped"
    assert "lm-eval is not installed" in data["note"] and "sparring[statscore]" in console.export_text()


# ---- end to end: lm-eval on the bundled model ------------------------------------------------------

lm_eval_mark = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("lm_eval") is None, reason="needs lm-eval (sparring[statscore])")


@pytest.fixture(scope="module")
def smol_spec():
    from sparring.models.registry import get_model_spec

    return get_model_spec("smollm2-135m")


@pytest.fixture(scope="module")
def lora_dir(tmp_path_factory):
    """A LoRA adapter of the bundled model with random (non-zero) weights: it moves every log-likelihood."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from sparring.models.bundled import bundled_model_dir

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(str(bundled_model_dir()), dtype=torch.float32)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"],
                                           init_lora_weights=False, task_type="CAUSAL_LM"))
    out = tmp_path_factory.mktemp("adapter") / "noisy"
    lora.save_pretrained(str(out))
    return out


def _facts_block(**kw) -> Statscore:
    return Statscore(tasks={"facts": StaticTask(task="sparring_facts", file="static/facts.yaml", metric="acc")}, **kw)


@lm_eval_mark
@pytest.mark.bundled
def test_local_task_end_to_end_and_an_adapter_changes_the_loglikelihoods(smol_spec, lora_dir):
    from sparring.evaluation.statscore import hflm, run_task

    block = _facts_block()
    base = hflm(smol_spec, None, 8)
    figures, items = run_task(base, block.tasks["facts"], "facts", block, STATIC.parent)
    assert figures["status"] == "ok" and figures["n"] == FACTS_N == len(items)
    assert 0.0 <= figures["value"] <= 1.0 and figures["score"] == pytest.approx(100 * figures["value"])
    assert set(items.values()) <= {0.0, 100.0}
    assert figures["score"] == pytest.approx(sum(items.values()) / len(items))

    import lm_eval
    from lm_eval.tasks import TaskManager

    from sparring.evaluation.static_tasks import task_config

    cfg = task_config(block.tasks["facts"], STATIC.parent, "facts")

    def loglikelihoods(lm) -> list[float]:
        r = lm_eval.simple_evaluate(model=lm, tasks=[cfg], task_manager=TaskManager(), limit=3, log_samples=True)
        return [resp[0] for s in r["samples"]["sparring_facts"] for resp in s["filtered_resps"]]

    before = loglikelihoods(base)
    del base
    adapted = hflm(smol_spec, str(lora_dir), 8)
    after = loglikelihoods(adapted)
    assert len(before) == len(after) == 12  # 3 documents x 4 choices
    assert max(abs(a - b) for a, b in zip(before, after, strict=True)) > 1e-3


@lm_eval_mark
@pytest.mark.bundled
def test_an_unreachable_dataset_is_one_error_naming_the_task_and_the_hub_id(smol_spec, tmp_path: Path):
    from sparring.evaluation.statscore import run_statscore

    (tmp_path / "gone.yaml").write_text(yaml.safe_dump({
        "task": "gone_task", "dataset_path": "sparring-tests/no-such-dataset", "test_split": "test",
        "output_type": "multiple_choice", "doc_to_text": "{{q}}", "doc_to_choice": "{{c}}", "doc_to_target": 0,
        "metric_list": [{"metric": "acc"}]}))
    block = Statscore(tasks={"facts": StaticTask(task="sparring_facts", file=str(STATIC / "facts.yaml"), limit=4),
                             "gone": StaticTask(task="gone_task", file="gone.yaml")})
    out = run_statscore(smol_spec, block, tmp_path)
    err = out["tasks"]["gone"]
    assert out["status"] == "incomplete" and err["status"] == "error"
    assert "statscore task gone" in err["error"] and "sparring-tests/no-such-dataset" in err["error"]
    assert "\n" not in err["error"] and "Traceback" not in err["error"]
    assert out["scored"] == ["facts"] and out["missing"] == ["gone"]
    assert out["statscore"] == pytest.approx(out["tasks"]["facts"]["score"])  # not averaged in as 0


@lm_eval_mark
@pytest.mark.bundled
@pytest.mark.timeout(900)
def test_bench_reports_clemscore_and_statscore_with_an_adapter(lora_dir, tmp_path: Path):
    """One bench with `--adapter` (the base model's statscore is the end-to-end test above; a second
    bench here would double a minute of CI for no new path)."""
    from sparring.cli.root import app

    out = tmp_path / "adapter"
    res = CliRunner().invoke(app, ["bench", "smollm2-135m", "--suite", "bench-quickstart", "--games", "taboo",
                                   "-n", "1", "-o", str(out), "--quiet", "--no-report", "--adapter", str(lora_dir)])
    assert res.exit_code == 0, res.output
    assert "clemscore" in res.output and "statscore" in res.output
    adapted = json.loads((out / "bench.json").read_text())
    (model,) = adapted["models"]
    assert model == "smollm2-135m+noisy" and model in adapted["clemscore"]
    st = adapted["statscore"]["models"][model]
    assert st["status"] == "ok" and st["tasks"]["facts"]["n"] == FACTS_N
    assert 0.0 <= st["statscore"] <= 100.0
    assert st["adapter"] == str(lora_dir.resolve())  # what lm-eval was given as peft=
    items = json.loads(Path(st["items_file"]).read_text())["facts"]
    assert len(items) == FACTS_N and set(items.values()) <= {0.0, 100.0}  # per document, for paired comparisons
    assert "## statscore" in (out / "bench.md").read_text()


@lm_eval_mark
def test_the_full_suites_tasks_and_metrics_are_lm_evals():
    """Playpen's set as suite.yaml names it: every task or group lm-eval knows (or a file of ours),
    and each metric and filter appears in the task's own YAML, so the suite fails on no name."""
    from lm_eval.tasks import TaskManager

    suite, path = load_suite("suite")
    assert suite.statscore is not None
    manager = TaskManager()
    index = manager.task_index
    for key, spec in suite.statscore.tasks.items():
        if spec.file:
            cfg = task_config(spec, path.parent, key)
            assert isinstance(cfg, dict) and cfg["task"] == spec.task
            text = yaml.safe_dump(cfg)
        else:
            assert spec.task in index, spec.task
            folder = Path(index[spec.task].yaml_path).parent
            text = "\n".join(p.read_text() for p in folder.iterdir() if p.name.endswith("yaml"))
        assert spec.metric in text, (key, spec.metric)
        assert spec.filter == "none" or spec.filter in text, (key, spec.filter)


@lm_eval_mark
@pytest.mark.bundled
def test_the_cladder_task_generates_and_scores_the_first_word_offline(smol_spec, tmp_path: Path):
    """sparring's CLadder task (Playpen's prompt, first word yes/no) end to end on three local
    documents shaped like clembench-playpen/cladder (`prompt`, `label`), through the chat template."""
    from sparring.evaluation.statscore import hflm, run_task

    rows = [{"prompt": "If it rains, the grass gets wet. It rained. Is the grass wet?", "label": "yes"},
            {"prompt": "Smoking causes cancer. Does cancer cause smoking?", "label": "no"},
            {"prompt": "Does a cause always come before its effect?", "label": "yes"}]
    (tmp_path / "cl.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = yaml.safe_load((STATIC / "cladder.yaml").read_text())
    cfg.pop("dataset_name")
    cfg.update(task="local_cladder", dataset_path="json", dataset_kwargs={"data_files": {"default": "cl.jsonl"}})
    (tmp_path / "cladder.yaml").write_text(yaml.safe_dump(cfg))
    spec = StaticTask(task="local_cladder", file="cladder.yaml", metric="exact_match", filter="first-word")
    block = Statscore(tasks={"cladder": spec}, apply_chat_template=True)
    figures, items = run_task(hflm(smol_spec, None, 4), spec, "cladder", block, tmp_path)
    assert figures["n"] == 3 and figures["filter"] == "first-word" and 0.0 <= figures["value"] <= 1.0
    assert set(items.values()) <= {0.0, 100.0} and len(items) == 3
