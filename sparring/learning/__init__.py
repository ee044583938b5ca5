"""The learning suite (`scripts/run_learning.py`, `sparring learning`): does playing make
the model better on instances it never trained on? Each experiment trains on one instance set,
measures a held-out set (checked disjoint) before and after, with intervals and paired differences.
"""
