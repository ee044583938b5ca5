"""Every command line in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/ parses with the real
command line it names (`--help` level: the command exists, every option is known); in-process, in
seconds. The extraction rules are in tests/doc_command_lines.py, the checking rules in tests/doc_commands.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from doc_command_lines import CommandLine, extract, segments  # noqa: E402
from doc_commands import ROOT, check_files, check_markdown, check_segment, doc_files, file_checker  # noqa: E402

SAMPLE = '''Run `sparring run quickstart --dry-run` first, or
`python scripts/run_debate.py
--configuration quickstart` (a span over two lines). `sparring` alone is the package's name.

```bash
OMP_NUM_THREADS=2 CI=true sparring run quickstart \\
    --num-iters 2   # a comment
pip install -e . && python scripts/run_grpo.py --configuration grpo-quickstart | tee log.txt
sparring models list; sparring data list || true  2>&1
```

```console
$ sparring report runs/qs
report: runs/qs/report/report.html
```

```python
sparring = "python scripts/run_debate.py --not-checked"
```

```
sparring/cli/    the package layout, not a command
python benchmarks/bench_train.py [--model tiny] [--steps N] [--batch-size N ...]
bash scripts/gpu_check.sh run [--kit DIR] --out DIR --only <parts>
```

| command | what |
|---|---|
| `sparring train sft\\|dpo DATA -o OUT` | train |

Alone on the machine: `OMP_NUM_THREADS=2 python scripts/run_learning.py --only grpo --output runs/g`.
'''


def test_the_extractor_finds_fenced_continued_and_inline_commands():
    assert extract(SAMPLE) == [
        CommandLine(1, "sparring run quickstart --dry-run"),
        CommandLine(2, "python scripts/run_debate.py --configuration quickstart"),
        CommandLine(6, "OMP_NUM_THREADS=2 CI=true sparring run quickstart --num-iters 2   # a comment"),
        CommandLine(8, "pip install -e . && python scripts/run_grpo.py --configuration grpo-quickstart | tee log.txt"),
        CommandLine(9, "sparring models list; sparring data list || true  2>&1"),
        CommandLine(13, "sparring report runs/qs"),
        CommandLine(22, "sparring/cli/    the package layout, not a command"),
        CommandLine(23, "python benchmarks/bench_train.py [--model tiny] [--steps N] [--batch-size N ...]"),
        CommandLine(24, "bash scripts/gpu_check.sh run [--kit DIR] --out DIR --only <parts>"),
        CommandLine(29, "sparring train sft|dpo DATA -o OUT"),
        CommandLine(31, "OMP_NUM_THREADS=2 python scripts/run_learning.py --only grpo --output runs/g"),
    ]
    assert segments("A=1 sparring run x \\\n --seed 3 # note") == [["A=1", "sparring", "run", "x", "--seed", "3"]]
    assert segments("pip install -e '.[dev]' && sparring models list | grep smol; sparring data list 2>&1 > out") == [
        ["pip", "install", "-e", ".[dev]"], ["sparring", "models", "list"], ["grep", "smol"],
        ["sparring", "data", "list"]]
    assert segments("sparring merge DIRS... [--output DIR] [--no-report] …") == [
        ["sparring", "merge", "DIRS", "--output", "DIR", "--no-report"]]


def test_the_sample_commands_are_checked_and_pass():
    results = check_markdown(SAMPLE, "sample.md")
    assert [(r.line, r.command) for r in results] == [
        (1, "sparring run quickstart --dry-run"),
        (2, "python scripts/run_debate.py --configuration quickstart"),
        (6, "OMP_NUM_THREADS=2 CI=true sparring run quickstart --num-iters 2"),
        (8, "python scripts/run_grpo.py --configuration grpo-quickstart"),
        (9, "sparring models list"),
        (9, "sparring data list"),
        (13, "sparring report runs/qs"),
        (23, "python benchmarks/bench_train.py --model tiny --steps N --batch-size N"),
        (24, "bash scripts/gpu_check.sh run --kit DIR --out DIR --only parts"),
        (29, "sparring train sft"),
        (31, "OMP_NUM_THREADS=2 python scripts/run_learning.py --only grpo --output runs/g"),
    ]
    assert [str(r) for r in results if r.error] == []


WRONG = '''```bash
sparring run quickstart --num-itres 2
sparring trian sft data -o out
python scripts/run_debate.py --config quickstart
python scripts/run_sft.py data/qs-sft -o adapters/qs --max-step 3
python scripts/run_grpo.py --configuration X --restart-from iter1
accelerate launch --config_file ddp.yaml scripts/run_iterative_dpo.py --configuration X --resume
python scripts/no_such_script.py
python benchmarks/bench_train.py --modle tiny
bash scripts/gpu_check.sh run --cpu --outdir D
bash scripts/gpu_check.sh check
sparring export sft runs/qs -o
sparring run quickstart --seed 1
```

Or `sparring train sft data -o out --epochs 2`, and `sparring models list`.
'''


def test_wrong_commands_and_options_are_each_reported_with_their_line():
    failures = [f"{r.line}: {r.command} -> {r.error}" for r in check_markdown(WRONG, "wrong.md") if r.error]
    # click words its messages differently across versions ("Possible options: ...", "Did you mean ...?")
    assert [f.split(" (Possible")[0].split(" Did you mean")[0] for f in failures] == [
        "2: sparring run quickstart --num-itres 2 -> No such option: --num-itres",
        "3: sparring trian sft data -o out -> No such command 'trian'.",
        "4: python scripts/run_debate.py --config quickstart -> No such option: --config",
        "5: python scripts/run_sft.py data/qs-sft -o adapters/qs --max-step 3 -> No such option: --max-step",
        "6: python scripts/run_grpo.py --configuration X --restart-from iter1 -> No such option: --restart-from",
        "7: accelerate launch --config_file ddp.yaml scripts/run_iterative_dpo.py --configuration X --resume "
        "-> No such option: --resume",
        "8: python scripts/no_such_script.py -> no such file: scripts/no_such_script.py",
        "9: python benchmarks/bench_train.py --modle tiny -> unrecognized arguments: --modle tiny",
        "10: bash scripts/gpu_check.sh run --cpu --outdir D -> unrecognized arguments: --outdir D",
        "11: bash scripts/gpu_check.sh check -> usage: bash scripts/gpu_check.sh prepare [...] | run [...]",
        "12: sparring export sft runs/qs -o -> '--help' was taken as a value (does the last option lack its value?)",
        "16: sparring train sft data -o out --epochs 2 -> No such option: --epochs",
    ]


def test_other_commands_are_left_alone():
    for line in ("pip install -e .", "pytest -m 'not slow'", "mkdocs build --strict", "python -c 'print(1)'",
                 "python -m pip install x", "ruff check .", "bash .ci/run"):
        assert all(check_segment(tokens) is None for tokens in segments(line)), line


@pytest.mark.parametrize("folder", ["scripts", "benchmarks"])
def test_every_script_and_benchmark_has_a_command_line_the_checker_can_read(folder):
    for path in sorted((ROOT / folder).glob("*.py")):
        check = file_checker(path)
        assert check([]) == "", path
        assert "--bogus-option" in check(["--bogus-option"]), path
        assert check_segment(["python", f"{folder}/{path.name}", "--bogus-option"]) == check(["--bogus-option"])


def test_every_documented_command_line_parses():
    files = doc_files()
    assert (ROOT / "README.md") in files
    results = check_files(files)
    assert len(results) >= 20, f"only {len(results)} commands found in {[f.name for f in files]}: is extraction broken?"
    failures = [str(r) for r in results if r.error]
    assert not failures, (f"{len(failures)} of {len(results)} documented commands do not parse:\n"
                          + "\n".join(failures))


def test_results_name_the_file_line_command_and_error(tmp_path):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("# Page\n\n```sh\n$ sparring run x --nope\n```\n", encoding="utf-8")
    assert [str(r) for r in check_files([page], root=tmp_path)] == [
        "docs/page.md:4: sparring run x --nope -> No such option: --nope"]
