"""Statistics with no knowledge of games or records: Bradley–Terry ratings, confidence intervals
and tests, calibration. At the bottom of the layers, so the engine (swiss pairing), analysis,
game report sections and training loops share one implementation."""
