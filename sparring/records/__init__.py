"""Episode records, the append-only store of a run directory, and the one reader of runs.

Below the engine: records know games' value types (events, outcomes) but no experiment schema,
so training exporters, reports and the web app read runs without importing the engine.
"""
