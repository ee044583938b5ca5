"""Scripted replies that YAML cannot spell (used by `mode: callable` models in the tests)."""


def surrogate_reply(request) -> str:
    """What a server returns for the JSON escape "\\udcff": a lone UTF-16 surrogate."""
    return "[message] bad \udcff reply"
