"""Scripted replies that YAML cannot spell (used by `mode: callable` models in the tests)."""


def surrogate_reply(request) -> str:
    """What a server returns for the JSON escape "\\udcff": a lone UTF-16 surrogate."""
    return "[message] bad \udcff reply"


FUZZ = [
    "",
    "\x00\x00\x00",
    "[propose]",
    "[propose] 1 books, 1 hats",
    "[message] [message] [message]",
    "[propose] (99 books, -1 hats, 1.5 balls)",
    "[propose] 1 books, 1 hats, 1 balls (final offer)",
    "]][[message",
    "{\"action\": \"propose\", \"books\": \"x\"}",
    "\u202eRTL override \u202c [message] hi",
    "bad \udcff surrogate [message] x",
    "<quote>unclosed quote",
    "<quote></quote><invalid_quote>x</invalid_quote>",
    "Debater_A | 150%",
    "word " * 200_000,  # 1 MB
    "\ufeff[message] with a BOM",
    "[MESSAGE]: shouting",
]


def fuzz_reply(request) -> str:
    """A hostile reply chosen by the request's seed (deterministic), sometimes random bytes."""
    import random

    rng = random.Random(request.sampling.seed)
    if rng.random() < 0.25:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).decode("latin-1")
    return rng.choice(FUZZ)
