#!/usr/bin/env bash
# Dry runs of every shipped training config (configs/train/*.yaml): each validates the loop or
# GRPO config and every nested experiment, dataset and model spec, and prints the plan, without
# loading any weights. Called from .ci/run; fails on the first config that does not validate.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export SPARRING_RUNS_DIR="$scratch/runs"  # never resume a developer's runs/
shopt -s nullglob
configs=(configs/train/*.yaml)
if [ ${#configs[@]} -eq 0 ]; then
  echo "no configs/train/*.yaml" >&2
  exit 1
fi
for config in "${configs[@]}"; do
  name="$(basename "$config" .yaml)"
  if grep -qE '^experiment:' "$config"; then
    script=scripts/run_grpo.py
  elif grep -qE '^method: *sft' "$config"; then
    script=scripts/run_selfplay_sft.py
  else
    script=scripts/run_iterative_dpo.py
  fi
  echo "== dry run: $script --configuration $name"
  python "$script" --configuration "$name" --dry-run
done
echo "== dry run: scripts/run_sft.py on a tiny row file"
rows="$scratch/rows"; mkdir -p "$rows"
printf '%s\n' '{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}' > "$rows/train.jsonl"
python scripts/run_sft.py "$rows" -o "$rows/adapter" --dry-run
