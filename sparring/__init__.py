"""sparring: language models debate and negotiate, are judged, rated and trained on their games."""

__version__ = "0.2.0"  # the only place the version is written (pyproject.toml reads it)
