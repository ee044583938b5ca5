"""Analysis of stored runs: metrics, ratings, statistical tests, calibration, plots, the report.

Game-specific statistics come from each game's report section (`games/<game>/report.py`).
"""
