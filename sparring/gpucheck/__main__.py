"""`python -m sparring.gpucheck prepare|run|part` (what `scripts/gpu_check.sh` calls)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def build_parser() -> argparse.ArgumentParser:
    """The command line (tests/test_doc_commands.py parses the docs' `gpu_check.sh` lines with it)."""
    ap = argparse.ArgumentParser(prog="python -m sparring.gpucheck", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="build the kit folder (needs the package index)")
    p.add_argument("--kit", type=Path, default=Path("gpu_kit"))
    p.add_argument("--image", type=Path, default=None, help="what the GPU image has: one package name a line")
    p.add_argument("--max-mib", type=float, default=60.0)
    r = sub.add_parser("run", help="run every part and write gpu_check.json / gpu_check.md")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--cpu", action="store_true", help="the same parts at toy size on the CPU")
    r.add_argument("--only", default=None, help="comma-separated parts (setup always runs)")
    one = sub.add_parser("part", help=argparse.SUPPRESS)
    one.add_argument("name")
    one.add_argument("--work", type=Path, required=True)
    one.add_argument("--cpu", action="store_true")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "prepare":
        from sparring.errors import SparringError
        from sparring.gpucheck.kit import prepare

        image = None
        if args.image:
            image = [line.split("#")[0].strip() for line in args.image.read_text().splitlines()]
            image = [n for n in image if n]
        try:
            manifest = prepare(args.kit, image, args.max_mib)
        except SparringError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"kit: {args.kit} ({manifest['mib']} MiB): {len(manifest['wheels'])} wheels "
              f"({', '.join(w['name'] + ' ' + w['version'] for w in manifest['wheels'])}), the bundled tokenizer")
        for name, why in manifest["not_carried"].items():
            print(f"not carried: {name} ({why})")
        print("On the GPU machine, with this checkout and the kit folder inside it (or --kit DIR), run:\n"
              f"    bash scripts/gpu_check.sh run --kit {args.kit} --out OUTDIR\n"
              "It needs no network; it writes OUTDIR/gpu_check.json and OUTDIR/gpu_check.md in at most 8 minutes.")
        return 0
    if args.command == "part":
        from sparring.gpucheck.runner import run_part

        run_part(args.name, args.work, args.cpu)
        return 0
    from sparring.gpucheck.runner import run_all

    only = [x.strip() for x in args.only.split(",") if x.strip()] if args.only else None
    report = run_all(args.out, args.cpu, only)
    print(f"gpu check: {report['passed']} of {len(report['parts'])} parts passed; "
          f"{args.out / 'gpu_check.md'}")
    return 1 if report["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
