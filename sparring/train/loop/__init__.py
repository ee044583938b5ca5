"""Iterative training loops (`scripts/run_iterative_dpo.py`, `scripts/run_selfplay_sft.py`):
`driver.py` runs the iterations, `config.py` is their schema, `state.py` what a resumed loop reads
back, `evaluation.py` the held-out cross-play, `report.py` the loop's report."""
