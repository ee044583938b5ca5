"""The learning suite's experiments, one module per experiment, named as the experiment
(`textarena-kuhn` is `textarena_kuhn.py`); each registers itself with `@experiment(NAME)`."""
