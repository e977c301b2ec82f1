"""Benchmark, not a test: node work under SIGKILL at many points (issue 32's proof), on a cluster of its own.

    python tests/bench/bench_node_kills.py [--kills 20] [--runtime local] [--seed 1] [SPECS_DIR]

Starts a cluster from the specs' cluster section (as `kraftform verify` does), writes acks=all idempotent records
into a 6-partition topic throughout, and SIGKILLs `kraftform apply --state-dir` at random points of rolling
restarts and of a broker added and removed again (`verification.nodework`); after each kill a plain apply and a
plan that must be empty. Prints one row per trial, then the records acknowledged and lost, the most partitions
seen offline at once and the brokers left throttled. `kraftform verify` runs the same trials (3 in --quick).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

from kraftform.runtime import get_runtime
from kraftform.verification.nodework import node_kill_trials
from kraftform.verification.run import QUICK, Options, Verification


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs_dir", nargs="?", default="specs", type=Path)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--runtime", choices=("local", "docker"), default="local")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kfbench-kills-"))
    (workdir / "logs").mkdir()
    run = Verification(Options(args.specs_dir, dataclasses.replace(QUICK, node_kills=args.kills),
                               runtime=args.runtime, seed=args.seed), lambda line: print(line, flush=True))
    target = run.target(workdir)
    try:
        kills = node_kill_trials(target, run.trial_cluster(), args.kills, args.seed, lambda line: print(line))
    finally:
        if run.own_state is not None:
            get_runtime(args.runtime, run.own_state).down(purge=True)
    print("\n| trial | change | killed after s | last step reported | converged |\n| --- | --- | --- | --- | --- |")
    for t in kills.trials:
        print(f"| {t.trial} | {t.change} | {t.killed_after_s:.1f} | {t.reached} | "
              f"{'yes' if t.converged else 'NO: ' + t.detail[-200:]} |")
    killed = sum(1 for t in kills.trials if t.reached != "finished before the kill")
    print(f"\n{args.runtime}: {killed} applies killed, {sum(t.converged for t in kills.trials)} of {len(kills.trials)} "
          f"trials converged; {kills.lost} of {kills.acked} acknowledged records lost; at most {kills.offline_max} "
          f"partition(s) offline at once; throttles left on: {', '.join(kills.throttled) or 'none'}; "
          f"{kills.seconds:.0f} s (work dir {workdir})")
    return 0 if kills.passed else 1


if __name__ == "__main__":
    sys.exit(main())
