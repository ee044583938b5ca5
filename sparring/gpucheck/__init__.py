"""A GPU self-check that runs in minutes on an offline GPU machine, prepared on a connected one.

`scripts/gpu_check.sh prepare` builds the kit (`kit.py`: the wheels the GPU image lacks and the
bundled tokenizer, at most 60 MiB); `scripts/gpu_check.sh run` installs the kit into a temporary
folder and runs every part (`parts/`) in its own process under its own time cap
(`runner.py`), writing `gpu_check.json` and `gpu_check.md`; `run --cpu` runs the same parts at toy
size on the CPU (CI), so the check cannot rot.
"""
