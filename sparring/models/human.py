"""Human backend: a person plays a seat (debater, judge, negotiator) from the terminal.

Why a backend and not a special agent: the game, agents and engine stay unchanged — a human is
just a slow model. Input and output are injectable (`input_fn`, `console`) so the web UI can
reuse the logic and tests can drive it without a terminal.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from typing import Any

from pydantic import Field

from sparring.errors import BackendError
from sparring.models.base import Model, register_backend
from sparring.models.scripted import PROB_FLOOR, apply_stop, count_tokens, prompt_tokens
from sparring.types import Completion, GenerateRequest, Message, ScoreRequest, Usage

_STYLES = {"system": "blue", "user": "green", "assistant": "magenta"}
_NUMBER = re.compile(r"^\s*(\d*\.\d+|\d+\.?\d*)\s*(%?)\s*$")


@register_backend("human")
class HumanModel(Model):
    """Shows the conversation as panels and reads the reply.

    Blank input asks again; end of input (EOF) raises BackendError("no human input"). With
    `multiline: true` the reply is every line up to a line holding only `end_marker`.
    Scoring asks for an option (its name or number) or a probability for the first option
    ("0.7" or "70%"; with more than two options the rest share what remains equally).
    """

    concurrent = False

    class Args(Model.Args):
        multiline: bool = False
        end_marker: str = "."
        show_system: bool = Field(True, description="also show system messages (rules, role)")
        apply_limits: bool = Field(False, description="cut replies at stop strings / max_new_tokens")

    args: Args  # the validated `args:` of this backend's spec

    def __init__(self, name: str = "human", *, input_fn: Callable[[str], str] | None = None,
                 console: Any | None = None, **kwargs: Any):
        super().__init__(name, **kwargs)
        self.console = console
        self.input_fn = input_fn
        self._lock = threading.Lock()  # one prompt on the terminal at a time

    # -- terminal I/O --------------------------------------------------------------------------
    def _console(self) -> Any:
        if self.console is None:
            from rich.console import Console

            self.console = Console()
        return self.console

    def _read(self, prompt: str) -> str:
        try:
            if self.input_fn is not None:
                return self.input_fn(prompt)
            return self._console().input(prompt)
        except EOFError:
            raise BackendError("no human input") from None

    def _ask(self, prompt: str) -> str:
        """One non-blank answer (several lines in multiline mode)."""
        while True:
            if not self.args.multiline:
                text = self._read(prompt).strip()
            else:
                self._console().print(f"[dim](finish with a line containing only {self.args.end_marker!r})[/dim]")
                lines: list[str] = []
                while (line := self._read(prompt if not lines else "")).strip() != self.args.end_marker:
                    lines.append(line)
                text = "\n".join(lines).strip()
            if text:
                return text
            self._console().print("[yellow]Please type an answer.[/yellow]")

    def _show(self, messages: list[Message], context: dict[str, Any], prefix: str = "") -> None:
        from rich.panel import Panel
        from rich.text import Text

        console = self._console()
        who = " ".join(str(context[k]) for k in ("player", "role", "tag") if context.get(k) is not None)
        console.rule(f"{self.name}: your turn" + (f" ({who})" if who else ""))
        for m in messages:
            if m.role == "system" and not self.args.show_system:
                continue
            title = "you" if m.role == "assistant" else m.role
            console.print(Panel(Text(m.content), title=title, title_align="left", border_style=_STYLES[m.role]))
        if prefix:
            console.print(Text(f"Your reply continues: {prefix}", style="bold"))

    # -- Model hooks -------------------------------------------------------------------------
    def _generate(self, requests: list[GenerateRequest]) -> list[Completion]:
        out = []
        for req in requests:
            with self._lock:
                self._show(req.messages, req.context, req.assistant_prefix)
                text = self._ask("> ")
            finish = "stop"
            if self.args.apply_limits:
                text, finish = apply_stop(text, req.sampling.stop, req.sampling.max_new_tokens)
            usage = Usage(prompt_tokens=prompt_tokens(req.messages, req.assistant_prefix),
                          completion_tokens=count_tokens(text))
            out.append(Completion(text=text, finish_reason=finish, usage=usage))
        return out

    def _score(self, requests: list[ScoreRequest]) -> list[list[float]]:
        out = []
        for req in requests:
            with self._lock:
                self._show(req.messages, req.context, req.assistant_prefix)
                out.append(self._ask_distribution(req.options))
        return out

    def _ask_distribution(self, options: list[str]) -> list[float]:
        console = self._console()
        for i, opt in enumerate(options, 1):
            console.print(f"  [bold]{i}[/bold]. {opt}")
        hint = f"option (name or 1-{len(options)}) or probability for {options[0]!r} (e.g. 0.7 or 70%): "
        while True:
            probs = self.parse_choice(self._ask(hint), options)
            if probs is not None:
                return [math.log(max(p, PROB_FLOOR)) for p in probs]
            console.print("[yellow]Not understood: type an option or a probability between 0 and 1.[/yellow]")

    @staticmethod
    def parse_choice(answer: str, options: list[str]) -> list[float] | None:
        """Answer -> probabilities per option, or None when it cannot be understood.

        Option names win over numbers; a whole number picks an option; a decimal or a percentage
        is the probability of the first option.
        """
        answer = answer.strip()
        lowered = [o.strip().lower() for o in options]
        if answer.lower() in lowered:
            pick = lowered.index(answer.lower())
            return [1.0 if i == pick else 0.0 for i in range(len(options))]
        m = _NUMBER.match(answer)
        if not m:
            return None
        number, percent = m.groups()
        if not percent and "." not in number:
            pick = int(number) - 1
            if not 0 <= pick < len(options):
                return None
            return [1.0 if i == pick else 0.0 for i in range(len(options))]
        p = float(number) / (100.0 if percent else 1.0)
        if not 0.0 <= p <= 1.0:
            return None
        if len(options) == 1:
            return [1.0]
        rest = (1.0 - p) / (len(options) - 1)
        return [p] + [rest] * (len(options) - 1)
