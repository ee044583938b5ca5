"""Option scoring from the top-k log-probabilities of ONE generated token (for API servers).

Chat APIs do not score arbitrary continuations, but they can return the top-k alternatives of
the next token. An option's log-probability is approximated by the probability that the next
token starts it, which is exact when the options differ in their first token and the rest
of an option is determined by its first token ("A"/"B", "Yes"/"No", and "Debater_A"/"Debater_B"
once the shared "Debater_" is moved into the assistant prefix).

Rules (documented here because results depend on them):
- Leading whitespace of options and of returned tokens is ignored (tokenizers glue spaces to the
  following word, so " A" and "A" are the same answer).
- With prefill, the longest common prefix of the options (trimmed back to not end in whitespace)
  is appended to the assistant prefix; without prefill, options must already differ in their first
  character and there must be no assistant prefix, else `ScoringNotSupported` (`PrefillNotSupported`
  for the prefix: callers then ask for the answer in the instruction, see `instruction_request`).
- A top-k token counts for an option when it is a non-empty prefix of the option's remaining
  text; several matching tokens (e.g. "A" and " A") are added up (log-sum-exp).
- An option absent from the top-k gets the floor
  `min(min top-k logprob, log(max(1 - sum top-k probs, 1e-9) / n_missing))`: the unseen mass split
  evenly among the missing options, but never more likely than the least likely token shown.
  The result is always finite (never NaN / -inf).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass

from sparring.errors import BackendError, PrefillNotSupported, ScoringNotSupported
from sparring.types import Message, ScoreRequest

MIN_UNSEEN_MASS = 1e-9
_MIN_LOGPROB = -1e4  # servers encode "-inf" as e.g. -9999.0; keep everything finite


@dataclass(frozen=True)
class ScorePlan:
    prefix: str           # assistant prefix to continue (request prefix + options' shared text)
    heads: list[str]      # per option: the text the first generated token must start


def _leading_ws(text: str) -> str:
    return text[: len(text) - len(text.lstrip())]


def plan_options(options: list[str], assistant_prefix: str, *, prefill: bool) -> ScorePlan:
    """Decide what to send and what to compare; raises ScoringNotSupported when it cannot work."""
    stripped = [o.lstrip() for o in options]
    if any(not s for s in stripped):
        raise ScoringNotSupported(f"cannot score options {options!r}: an option is empty or only whitespace")
    if len(set(stripped)) != len(stripped):
        raise ScoringNotSupported(f"cannot score options {options!r}: options coincide once leading "
                                  "whitespace is ignored")
    shared = os.path.commonprefix(stripped).rstrip()
    if not prefill:
        if assistant_prefix:
            raise PrefillNotSupported(
                f"cannot score with assistant_prefix {assistant_prefix!r}: this server is not set up to "
                "continue an assistant prefix (set supports_prefill: true for vLLM-like servers; agents "
                "then ask for the answer in the instruction instead)")
        if shared:
            raise ScoringNotSupported(
                f"cannot score options {options!r}: they share the leading text {shared!r}, so their first "
                "tokens cannot be told apart; set supports_prefill: true for servers that continue an "
                "assistant prefix (vLLM), or use options that differ in their first character")
        return ScorePlan(prefix="", heads=stripped)
    heads = [s[len(shared):].lstrip() for s in stripped]
    if any(not h for h in heads):
        raise ScoringNotSupported(f"cannot score options {options!r}: one option is a prefix of another, so "
                                  "the first token after the shared text cannot tell them apart")
    if len({h[0] for h in heads}) != len(heads):
        raise ScoringNotSupported(f"cannot score options {options!r}: they differ only in whitespace")
    ws = os.path.commonprefix([_leading_ws(o) for o in options])
    prefix = assistant_prefix + ws + shared if shared else assistant_prefix
    return ScorePlan(prefix=prefix, heads=heads)


def _logsumexp(values: list[float]) -> float:
    m = max(values)
    return m + math.log(sum(math.exp(v - m) for v in values))


def floor_logprob(top: list[tuple[str, float]], n_missing: int) -> float:
    """Log-probability given to each of `n_missing` options absent from the top-k (see module doc)."""
    mass = sum(math.exp(lp) for _, lp in top)
    unseen = max(1.0 - mass, MIN_UNSEEN_MASS)
    return min(min(lp for _, lp in top), math.log(unseen / max(n_missing, 1)))


def clean_top(entries: Iterable[tuple[str, float | None]]) -> list[tuple[str, float]]:
    """Distinct tokens with finite log-probabilities in [-1e4, 0], first occurrence wins."""
    seen: dict[str, float] = {}
    for token, lp in entries:
        if token is None or lp is None or token in seen or isinstance(lp, bool):
            continue
        lp = float(lp)
        if math.isnan(lp):
            continue
        seen[token] = min(max(lp, _MIN_LOGPROB), 0.0)
    return list(seen.items())


def option_logprobs(heads: list[str], top: list[tuple[str, float]]) -> list[float]:
    """Per-option log-probabilities from one token's top-k table (see module doc)."""
    if not top:
        raise BackendError("server returned no top_logprobs for the scored token; it may not support "
                           "logprobs (try a server that does, or let the judge answer in text)")
    matched: list[list[float]] = [[] for _ in heads]
    for token, lp in top:
        t = token.lstrip()
        if not t:
            continue
        for i, head in enumerate(heads):
            if head.startswith(t):
                matched[i].append(lp)
                break  # heads differ in their first character, so at most one matches
    n_missing = sum(1 for m in matched if not m)
    floor = floor_logprob(top, n_missing) if n_missing else 0.0
    return [_logsumexp(m) if m else floor for m in matched]


def answer_instruction(options: list[str]) -> str:
    """The instruction that replaces an assistant prefix: the reply must BE one of the options, so
    its first generated token tells them apart ("Answer with the letter only: A or B.")."""
    heads = [o.strip() for o in options]
    listed = heads[0] if len(heads) == 1 else ", ".join(heads[:-1]) + " or " + heads[-1]
    if all(len(h) == 1 and h.isalpha() for h in heads):
        return f"Answer with the letter only: {listed}."
    return f"Answer with only one of: {listed}. Write nothing else."


def instruction_messages(messages: list[Message], options: list[str]) -> list[Message]:
    """`messages` with the answer instruction added to the last user turn (or as a new one)."""
    note = answer_instruction(options)
    out = list(messages)
    if out and out[-1].role == "user":
        out[-1] = Message(role="user", content=f"{out[-1].content.rstrip()}\n\n{note}")
    else:
        out.append(Message(role="user", content=note))
    return out


def instruction_request(req: ScoreRequest) -> ScoreRequest:
    """`req` for a backend that cannot continue its assistant prefix: the prefix is dropped and the
    last user turn asks for the bare option instead; the options are scored from the first
    generated token, so they must differ in their first character (" A"/" B" do)."""
    return req.model_copy(update={"messages": instruction_messages(req.messages, req.options),
                                  "assistant_prefix": ""})
