#!/usr/bin/env python
"""Does the conversation view change what a warm start learns? (issue #59: measured, not assumed)

`textarena-tictactoe`'s warm start (LoRA SFT on the random legal player's moves in games against
itself, 64 demonstration games on their own training seeds, 24 steps of 4 rows) trained twice on
the same games (and the same number of moves: the conversation view's rows are whole games),
once with the prompts of each view (`rendered`: every move re-reads TextArena's
whole observation; `conversation`: the game as a chat that only grows), and each start evaluated
in its own view against `textarena-random` on the same held-out test seeds, both seats, at the
experiment's temperature 0.7: win, draw and refused-move rates with 95% intervals, and the paired
win difference per held-out game (conversation − rendered). Held-out seeds are checked disjoint
from the demonstrations'.

    OMP_NUM_THREADS=2 python benchmarks/bench_view_warm_start.py            # bundled model, ~40 min
    python benchmarks/bench_view_warm_start.py --model tiny --demos 2 --steps 1 --heldout 2   # a check
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

VIEWS = ("rendered", "conversation")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="a models.yaml name, a directory, or 'tiny'")
    ap.add_argument("--demos", type=int, default=64, help="demonstration games (textarena-tictactoe: 64)")
    ap.add_argument("--steps", type=int, default=24, help="SFT steps of 4 one-move rows (textarena-tictactoe: 24); "
                    "a view whose rows are whole games gets the steps that train as many moves")
    ap.add_argument("--heldout", type=int, default=64, help="held-out test seeds, each played in both seats")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    return ap


def measure(ctx: Any, view: str, args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """One view: demonstrations and the warm start as `textarena-tictactoe` trains it (the same
    moves in both views: a conversation-view row is a whole game), its held-out games."""
    from sparring.learning.experiments.textarena_tictactoe import evaluate, warm_start

    size = {"demos": args.demos, "demo_steps": args.steps, "heldout": args.heldout, "tokens": 16, "view": view}
    adapter, info, demos = warm_start(ctx, size)
    alias = ctx.register(f"warm-{view}", adapter)
    scored, per, played = evaluate(ctx, alias, f"heldout-{view}", size)
    figures = {"rows": info["rows"], "moves_per_row": info["moves_per_row"], "sft_steps": info["steps"],
               "sft_loss": info["loss"], "games": len(played.records), "win_rate": scored["win_rate"],
               "draw_rate": scored["draw_rate"], "refused_move_share": scored["invalid_move_share"]}
    return figures, per, sorted({r.instance_id for r in demos.records})


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    from sparring.gameapi.splits import check_disjoint
    from sparring.learning.context import Context
    from sparring.learning.results import paired

    out = Path(tempfile.mkdtemp(prefix="bench-view-warm-"))
    model = args.model
    if model == "tiny":
        from sparring.models.tiny import save_tiny_model

        model = str(save_tiny_model(out / "tiny"))
    ctx = Context(out=out, size="full", model=model, label="base")
    ctx.write_models()
    results: dict[str, Any] = {"model": args.model, "views": {}}
    per: dict[str, dict[str, float]] = {}
    for view in VIEWS:
        figures, per[view], demo_ids = measure(ctx, view, args)
        check_disjoint(f"views ({view})", demo_ids, sorted({k.split("/")[0] for k in per[view]}))
        results["views"][view] = figures
        w = figures["win_rate"]
        print(f"{view:12s} warm start: {figures['rows']} rows of {figures['moves_per_row']:.1f} moves, "
              f"{figures['sft_steps']} steps, SFT loss {figures['sft_loss']:.3f}; held out "
              f"({figures['games']} games): win {w.value:.3f} [{w.ci[0]:.3f}, {w.ci[1]:.3f}], draw "
              f"{figures['draw_rate'].value:.3f}, refused moves {figures['refused_move_share'].value:.3f}")
    diff = paired(per["rendered"], per["conversation"])
    results["paired_win_conversation_minus_rendered"] = diff
    print(f"win, conversation - rendered, paired per held-out game (n={diff['n']}): {diff['mean_diff']:+.3f} "
          f"[{diff['mean_diff_ci_low']:+.3f}, {diff['mean_diff_ci_high']:+.3f}]")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=lambda o: getattr(o, "__dict__", str(o))),
                                   encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
