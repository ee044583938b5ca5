"""Evaluation: benchmark suites played through the engine (`sparring bench`) and their clembench
scores (the clemscore). Above the engine, which it drives, and beside analysis, whose reports it
writes for each run."""
