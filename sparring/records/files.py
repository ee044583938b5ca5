"""File names inside a run directory (shared by the store and the reader)."""

EPISODES, FAILURES, MANIFEST, CONFIG = "episodes.jsonl", "failures.jsonl", "manifest.json", "config.yaml"
