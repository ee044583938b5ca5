"""Debate-family games (debate, consultancy, double consultancy, open debate, naive judge).

Modules: `game` (the rules, registered as "debate"), `config` (its `game_args`), `state`,
`schedule` (turn order per format), `views` (who sees what), `quotes` (quote validation),
`background` (story-length policy), `instance`, `datasets` (registered question loaders and the
generator), `metrics` (per-episode metrics), `analysis` and `report` (its report section).
Nothing is imported here so that importing the package has no side effects.
"""
