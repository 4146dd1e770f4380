#!/usr/bin/env python
"""A larger fuzz campaign than the test suite's, with a per-kind breakdown.

    python benchmarks/fuzz_report.py [--cases N] [--seed S] [--kind KIND ...] [-v]

Each case damages one real input and runs the command that reads it (see
tests/helpers/fuzz.py).  Prints one row per input kind, the failing cases (with -v
all of their problems), and last ``fuzz: N inputs, T tracebacks, W writes outside``.
Exits 1 when any case failed; the repository is compared by content before and after.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from helpers.fuzz import Campaign, changed, summary, tree_digest  # noqa: E402 (after sys.path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60, help="cases per input kind (60)")
    parser.add_argument("--seed", type=int, default=1, help="campaign seed (1)")
    parser.add_argument("--kind", action="append", help="only this input kind (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="every problem of every case")
    args = parser.parse_args()

    before = tree_digest(REPO)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fuzz-report-") as workdir:
        campaign = Campaign(Path(workdir), seed=args.seed)
        kinds = args.kind or list(campaign.kinds)
        unknown = sorted(set(kinds) - set(campaign.kinds))
        if unknown:
            parser.error(
                f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(campaign.kinds)}"
            )
        print(
            f"{'kind':<24} {'inputs':>6} {'exit 0/1/2':>12} {'tracebacks':>10} {'writes':>6} "
            f"{'other':>5} {'seconds':>7}"
        )
        for kind in kinds:
            kind_started = time.monotonic()
            outcomes = campaign.run({kind: args.cases})[-args.cases :]
            codes = "/".join(str(sum(1 for o in outcomes if o.code == c)) for c in (0, 1, 2))
            n, tracebacks, writes = summary(outcomes)
            other = sum(
                1 for o in outcomes if not o.passed and not o.traceback and not o.wrote_outside
            )
            print(
                f"{kind:<24} {n:>6} {codes:>12} {tracebacks:>10} {writes:>6} {other:>5} "
                f"{time.monotonic() - kind_started:>7.1f}"
            )
        failed = [o for o in campaign.outcomes if not o.passed]
        for outcome in failed:
            problems = outcome.problems if args.verbose else outcome.problems[:1]
            print(
                f"FAIL {outcome.kind} #{outcome.case}: {outcome.command[:100]} -> "
                f"{outcome.code}: {'; '.join(problems)}"
            )
        repo_changes = changed(before, tree_digest(REPO))
        for path in repo_changes:
            print(f"CHANGED {path}")
        n, tracebacks, writes = summary(campaign.outcomes)
        writes += len(repo_changes)
        print(f"{time.monotonic() - started:.0f}s, seed {args.seed}")
        print(f"fuzz: {n} inputs, {tracebacks} tracebacks, {writes} writes outside")
    return 1 if failed or repo_changes else 0


if __name__ == "__main__":
    sys.exit(main())
