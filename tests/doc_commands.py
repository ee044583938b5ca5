"""Check each command line the docs show (found by tests/doc_command_lines.py) with the real command
line it names, in-process. The commands that run sparring are checked:

- `sparring ...` and `python -m sparring.cli ...`: the Typer app of `sparring.cli`;
- `python scripts/NAME.py ...` and `python benchmarks/NAME.py ...` (also under `accelerate launch`):
  the command line the file runs, read from the call in its `if __name__ == "__main__":` block:
  `sparring.cli...NAME_main(...)` is built by `NAME_app(...)` beside it, `sparring.cli.main([...])`
  is the root app with those arguments first, `typer.run(FUNC)` is FUNC's command; otherwise the
  file's argparse `build_parser()` (every benchmark has one);
- `bash scripts/gpu_check.sh prepare|run ...` and `python -m sparring.gpucheck ...`: the parser of
  `sparring.gpucheck.__main__` (the shell script itself consumes `run --kit DIR`).

The check is at `--help` level: the sub-command path must exist and every option must be known to
that command. Values are not converted and required arguments are not demanded, so placeholders
(`NAME`, `RUN_DIR`, `N`) pass; `[`/`]` and `...`/`…` are stripped (`[--resume DIR]` is checked as
`--resume DIR`). Nothing is run: a click command is parsed with `--help` appended and with every
command's callback replaced by one that fails the check; argparse parsers are parsed with their
types, choices and required flags switched off.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import inspect
import io
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doc_command_lines import ENV_ASSIGNMENT, extract, segments

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")
DOC_DIRS = ("docs",)
_PYTHON = re.compile(r"^python(3(\.\d+)?)?$")


# ---------------------------------------------------------------- the command lines they name


class _Ran(Exception):
    """Raised instead of running a command: `--help` was consumed as a value and did not stop parsing."""


def _ran(**_: Any) -> None:
    raise _Ran


def _no_help_text(ctx: Any, formatter: Any) -> None:
    return None


def _inert(command: Any) -> Any:
    """A click command tree whose commands cannot run (groups do nothing, leaf commands raise _Ran)
    and whose --help prints nothing (rendering it is most of the time a check would take)."""
    command.format_help = _no_help_text
    if hasattr(command, "commands"):
        command.callback = None
        for sub in command.commands.values():
            _inert(sub)
    else:
        command.callback = _ran
    return command


def _click_command(app: Any) -> Any:
    import typer.main

    return _inert(typer.main.get_command(app))


def check_click(command: Any, prog: str, args: list[str]) -> str:
    """'' when `prog ARGS --help` reaches the help of an existing command; else click's message."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            command.main([*args, "--help"], prog_name=prog, standalone_mode=False)
    except _Ran:
        return "'--help' was taken as a value (does the last option lack its value?)"
    except Exception as err:  # click's UsageError family (NoSuchOption, no such command, ...)
        if hasattr(err, "format_message"):
            return str(err.format_message())
        raise
    return ""


def _relax(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser with values unchecked and nothing required (argparse has no public API for its
    actions: `_actions` and `_SubParsersAction` are what every argparse tool reads)."""

    def error(message: str) -> None:
        raise _ParseError(message)

    parser.error = error  # type: ignore[method-assign,assignment]
    for action in parser._actions:
        action.required = False
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _relax(sub)
        else:
            action.type, action.choices = None, None
    return parser


class _ParseError(Exception):
    pass


def check_argparse(build: Callable[[], argparse.ArgumentParser], args: list[str]) -> str:
    """'' when every option is known to the parser `build()` returns (and sub-commands exist)."""
    parser = _relax(build())
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            _, extra = parser.parse_known_args(args)
    except _ParseError as err:
        return str(err)
    return f"unrecognized arguments: {' '.join(extra)}" if extra else ""


_cache: dict[str, Any] = {}  # the apps and parsers built in this process (one test session)


def _cached(key: str, make: Callable[[], Any]) -> Any:
    if key not in _cache:
        _cache[key] = make()
    return _cache[key]


def _root_command() -> Any:
    def make() -> Any:
        import sparring.cli

        return _click_command(sparring.cli.app)

    return _cached("sparring", make)


def file_checker(path: Path) -> Callable[[list[str]], str]:
    """How to check the arguments of a Python file run as a program, read from its `if __name__ ==
    "__main__":` block: a call of a `sparring.cli` `NAME_main` (or `main([...])`) is checked against
    the app `NAME_app` builds (or the root app, those arguments first); `typer.run(FUNC)` against
    FUNC's command; otherwise the file's `build_parser()`. Raises LookupError when none applies."""
    import typer

    tree = ast.parse(path.read_text(encoding="utf-8"))
    imports = {alias.asname or alias.name: (node.module, alias.name)
               for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
               for alias in node.names}
    guard = [node for node in tree.body if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)]
    calls = [node for g in guard for node in ast.walk(g) if isinstance(node, ast.Call)]
    for call in calls:
        if isinstance(call.func, ast.Name) and imports.get(call.func.id, ("",))[0].startswith("sparring."):
            module_name, name = imports[call.func.id]
            module = importlib.import_module(module_name)
            companion = getattr(module, name[: -len("main")] + "app", None) if name.endswith("main") else None
            if companion is None:
                raise LookupError(f"{path.name} calls {module_name}.{name}: no `*_main` function with its "
                                  "`*_app` beside it (see sparring/cli/__init__.py)")
            prefix: list[str] = []
            if call.args and isinstance(call.args[0], ast.List):  # main(["train", "sft", *sys.argv[1:]])
                prefix = [e.value for e in call.args[0].elts
                          if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if not isinstance(companion, typer.Typer):
                kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg}
                accepted = inspect.signature(companion).parameters
                companion = companion(**{k: v for k, v in kwargs.items() if k in accepted})
            return _click_checker(_click_command(companion), path.name, prefix)
        if (isinstance(call.func, ast.Attribute) and ast.unparse(call.func) == "typer.run"
                and call.args and isinstance(call.args[0], ast.Name)):
            app = typer.Typer(add_completion=False)  # what typer.run builds
            app.command()(getattr(_load_file(path), call.args[0].id))
            return _click_checker(_click_command(app), path.name, [])
    if any(isinstance(node, ast.FunctionDef) and node.name == "build_parser" for node in tree.body):
        build = _load_file(path).build_parser
        return lambda args: check_argparse(build, args)
    raise LookupError(f"{path.name}: cannot tell its command line (call a sparring.cli `*_main` function or "
                      "`typer.run(FUNC)` under `if __name__ == '__main__':`, or define build_parser())")


def _click_checker(command: Any, prog: str, prefix: list[str]) -> Callable[[list[str]], str]:
    return lambda args: check_click(command, prog, [*prefix, *args])


def _load_file(path: Path) -> Any:
    """Import a file as a module without leaving its sys.path changes behind."""
    saved = list(sys.path)
    try:
        spec = importlib.util.spec_from_file_location(f"_doc_commands_{path.stem}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = saved


def _gpucheck_parser() -> argparse.ArgumentParser:
    from sparring.gpucheck.__main__ import build_parser

    return build_parser()


def _check_python_file(path: str, args: list[str], root: Path) -> str:
    path = path.removeprefix("./")
    file = root / path
    if not file.is_file():
        return f"no such file: {path}"
    try:
        checker = _cached(str(file), lambda: file_checker(file))
    except LookupError as err:
        return str(err)
    return checker(args)


def _check_gpu_check_sh(args: list[str]) -> str:
    """scripts/gpu_check.sh: `prepare ARGS` passes ARGS on; `run` consumes `--kit DIR` itself."""
    if not args or args[0] not in ("prepare", "run"):
        return "usage: bash scripts/gpu_check.sh prepare [...] | run [...]"
    rest = list(args[1:])
    if args[0] == "run":
        while "--kit" in rest:
            k = rest.index("--kit")
            del rest[k:k + 2]
    return check_argparse(_gpucheck_parser, [args[0], *rest])


def _may_be_checked(word: str) -> bool:
    """Whether a simple command starting with WORD may run something check_segment checks."""
    word = word.removeprefix("./")
    return (word in ("sparring", "accelerate", "bash", "sh") or bool(_PYTHON.match(word))
            or word.startswith(("scripts/", "benchmarks/")))


def check_segment(tokens: list[str], root: Path = ROOT) -> str | None:
    """None when the simple command runs nothing of sparring's; '' when it parses; else the error."""
    tokens = list(tokens)
    while tokens and (ENV_ASSIGNMENT.match(tokens[0]) or tokens[0] in ("env", "time", "nohup", "exec")):
        tokens.pop(0)
    if not tokens:
        return None
    word, args = tokens[0], tokens[1:]
    if word == "sparring":
        return check_click(_root_command(), "sparring", args)
    if word == "accelerate" and args[:1] == ["launch"]:
        script = next((k for k, t in enumerate(args) if t.endswith(".py")), None)
        if script is None:
            return None
        word, args = "python", args[script:]
    if word in ("bash", "sh") and args:
        word, args = args[0], args[1:]
    if word.removeprefix("./") == "scripts/gpu_check.sh":
        return _check_gpu_check_sh(args)
    if word.removeprefix("./").startswith(("scripts/", "benchmarks/")) and word.endswith(".py"):
        return _check_python_file(word, args, root)
    if not _PYTHON.match(word):
        return None
    while args and args[0].startswith("-") and args[0] != "-m":  # interpreter options (-u, -X opt, ...)
        args = args[2:] if args[0] in ("-X", "-W") else args[1:]
    if args[:1] == ["-m"] and len(args) > 1:
        if args[1] == "sparring.cli":
            return check_click(_root_command(), "sparring", args[2:])
        if args[1] == "sparring.gpucheck":
            return check_argparse(_gpucheck_parser, args[2:])
        return None
    if args and args[0].removeprefix("./").startswith(("scripts/", "benchmarks/")) and args[0].endswith(".py"):
        return _check_python_file(args[0], args[1:], root)
    return None


# ---------------------------------------------------------------- the docs


@dataclass(frozen=True)
class Result:
    file: str
    line: int
    command: str  # the simple command checked
    error: str  # '' when it parses

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.command} -> {self.error}"


def doc_files(root: Path = ROOT) -> list[Path]:
    files = [root / name for name in DOC_FILES if (root / name).is_file()]
    for folder in DOC_DIRS:
        files += sorted((root / folder).rglob("*.md"))
    return files


def check_markdown(markdown: str, file: str, root: Path = ROOT) -> list[Result]:
    """Every sparring command of the markdown, checked."""
    results: list[Result] = []
    for command in extract(markdown):
        try:
            parts = segments(command.text)
        except ValueError as err:  # unbalanced quotes: an error only if the line runs a command we check
            words = command.text.split()
            while words and ENV_ASSIGNMENT.match(words[0]):
                words.pop(0)
            if words and _may_be_checked(words[0]):
                results.append(Result(file, command.line, command.text, f"cannot split it as a shell would: {err}"))
            continue
        for tokens in parts:
            error = check_segment(tokens, root)
            if error is not None:
                results.append(Result(file, command.line, shlex.join(tokens), error))
    return results


def check_files(files: Iterable[Path], root: Path = ROOT) -> list[Result]:
    results: list[Result] = []
    for path in files:
        name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        results += check_markdown(path.read_text(encoding="utf-8"), name, root)
    return results
