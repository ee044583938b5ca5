"""Evaluation: benchmark suites played through the engine (`sparring bench`), their clembench
scores (the clemscore) and their static tasks run by lm-evaluation-harness (the statscore). Above the engine, which it drives, and beside analysis, whose reports it
writes for each run."""
