"""Resilience: wrong specs never crash a command, and an apply killed anywhere converges on the next run.

The spec sets are mutations of the user's own spec directory, each run through `validate`, `diff` and a
live `plan` in this process, exactly as the CLI's entry point runs them; a crash is any exception escaping
it, a traceback in its output, or an exit status outside 0/1/2. The killed applies are real `kraftform
apply` processes SIGKILLed at random points of their own progress (killpoints.py), then a full apply, then a
plan that must be empty.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from kraftform.specset.files import spec_texts
from kraftform.verification import specsets
from kraftform.verification.killpoints import FINISHED, Killed, KillPoint, kill_at, stratified
from kraftform.verification.mutations import mutated_set
from kraftform.verification.target import Target

Progress = Callable[[str], None]
EntryPoint = Callable[[Sequence[str]], int]
#: What `kraftform apply` reports as it goes (on stderr, between the plan it prints and its last line).
PROGRESS = re.compile(r"^(\[\d+/\d+\] |observed |waiting |Applied )")
_STEP = re.compile(r"^\[\d+/\d+\] (\w+): (done)?")
_STEP_COUNT = re.compile(r"^\[\d+/(\d+)\] ")


def stage(reached: str) -> str:
    """The part of an apply a kill fell in, from the last progress line it printed."""
    step = _STEP.match(reached)
    if step:
        return f"after the {step[1]} step" if step[2] else f"in the {step[1]} step"
    for start, name in (("observed", "after observing, before the first step"),
                        ("waiting", "waiting for the brokers to show the changes"),
                        ("Applied", "after the last line (done)")):
        if reached.startswith(start):
            return name
    return reached


@dataclass(frozen=True)
class FuzzResult:
    sets: int
    runs: int
    rejected: int
    planned: int
    crashes: tuple[str, ...]
    seconds: float


def _cli(main: EntryPoint, argv: Sequence[str], log: TextIO) -> tuple[int, str]:
    """The CLI's entry point in this process; the exit status and its output (also appended to `log`)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    text = out.getvalue() + err.getvalue()
    log.write(f"$ kraftform {' '.join(argv)}\n{text}[exit {code}]\n")
    return code, text


def fuzz(target: Target, main: EntryPoint, specs_dir: Path, count: int, plan_every: int, seed: int,
         progress: Progress) -> FuzzResult:
    """`count` mutated spec sets through validate and diff; every `plan_every`-th also through a live plan."""
    start = time.monotonic()
    base = spec_texts(specs_dir)
    root = target.workdir / "fuzz"
    crashes: list[str] = []
    runs = rejected = planned = 0
    with open(target.workdir / "logs" / "fuzz.log", "w") as log:
        for number in range(count):
            files, mutations = mutated_set(base, seed * 1_000_003 + number)
            shutil.rmtree(root, ignore_errors=True)
            for name, text in files.items():
                path = root / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8", errors="surrogateescape")
            commands = [["validate", str(root)], ["diff", str(specs_dir), str(root)]]
            if number % plan_every == 0:
                commands.append(["plan", str(root), "--command-config", str(target.admin_properties)])
            for argv in commands:
                runs += 1
                what = f"set {number} ({'; '.join(f'{m.file}: {m.what}' for m in mutations)}): {argv[0]}"
                try:
                    code, text = _cli(main, argv, log)
                except BaseException as exc:
                    crashes.append(f"{what}: {type(exc).__name__}: {exc}")
                    continue
                if code not in (0, 1, 2) or "Traceback (most recent call last)" in text:
                    crashes.append(f"{what}: exit {code}")
                if argv[0] == "validate" and code == 1:
                    rejected += 1
                if argv[0] == "plan":
                    planned += 1
            if (number + 1) % 100 == 0:
                progress(f"  spec sets: {number + 1} of {count}, {len(crashes)} crash(es)")
    shutil.rmtree(root, ignore_errors=True)
    return FuzzResult(count, runs, rejected, planned, tuple(crashes), time.monotonic() - start)


@dataclass(frozen=True)
class KillTrial:
    trial: int
    killed_after_s: float
    #: The last step the killed apply reported (or that it finished before the kill).
    reached: str
    converged: bool
    detail: str


@dataclass
class Trials:
    """The spec directory the trials write, and the users' passwords (secrets the scan looks for)."""

    target: Target
    cluster: dict[str, Any]
    seed: int

    def __post_init__(self) -> None:
        run = self.target.run_id
        self.topic_prefix = f"verify-{run}."
        self.user_prefix = f"verify-{run}"
        self.passwords = {specsets.password_variable(j): secrets.token_urlsafe(18) for j in range(specsets.USERS)}
        self.root = self.target.workdir / "trial-specs"
        self.env = {**os.environ, **self.passwords}

    def write(self, sections: Mapping[str, list[dict[str, Any]]]) -> None:
        cluster = {**self.cluster, "managed_scope": {"topic_prefixes": [self.topic_prefix]}}
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        (self.root / "cluster.yaml").write_text(yaml.safe_dump({"cluster": cluster}))
        for name, items in sections.items():
            (self.root / f"{name}.yaml").write_text(yaml.safe_dump({name: items}))

    def command(self, verb: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", "kraftform", verb, str(self.root), "--command-config",
                str(self.target.admin_properties), *extra]

    def run(self, verb: str, log_name: str, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.command(verb, *extra), capture_output=True, text=True, env=self.env,
                              timeout=timeout, check=False)
        (self.target.workdir / "logs" / f"{log_name}.log").write_text(done.stdout + done.stderr)
        return done

    def apply(self, log_name: str) -> subprocess.CompletedProcess[str]:
        return self.run("apply", log_name, "--auto-approve", "--allow-destructive")

    def killed_apply(self, point: Callable[[Sequence[str]], KillPoint], log_name: str) -> Killed:
        """An apply SIGKILLed at `point` of its own progress."""
        return kill_at(self.command("apply", "--auto-approve", "--allow-destructive"),
                       self.target.workdir / "logs" / f"{log_name}.log", lambda line: bool(PROGRESS.match(line)),
                       point, self.env)


def apply_point(where: float, share: float, steps_before: int) -> Callable[[Sequence[str]], KillPoint]:
    """The kill point `where` (in [0, 1)) of an apply's progress: its events are the line saying what it observed,
    then each step's start and end. Until the apply's first step says how many it has, the number of steps of the
    apply before is assumed; the last step's end is the latest point, so the kill lands inside the apply."""
    def point(events: Sequence[str]) -> KillPoint:
        first = next((i for i, line in enumerate(events) if _STEP_COUNT.match(line)), 1)
        last = first + 2 * steps_of(events, steps_before) - 1
        event = min(last, int(where * (last + 1)))
        return KillPoint(event, 0.0 if event >= last else share)
    return point


def steps_of(events: Sequence[str], default: int) -> int:
    """How many steps an apply announced (`default` when it announced none)."""
    return next((int(m[1]) for line in events if (m := _STEP_COUNT.match(line))), default)


def kill_trials(target: Target, cluster: dict[str, Any], count: int, seed: int, progress: Progress
                ) -> tuple[list[KillTrial], dict[str, str]]:
    """`count` applies SIGKILLed at points of their own progress, each followed by an apply and a plan that must be
    empty (a trial whose apply had nothing to do before its kill point is reported, and one more is run). The points
    are stratified: the k-th kill falls at a random point of the k-th of `count` equal slices of an apply's
    progress (its observation, each step's start and end), so a few trials still reach its start, its middle and its
    end, on a fast machine and a slow one alike. Returns the trials and the passwords the users were given (for the
    secret scan)."""
    trials = Trials(target, cluster, seed)
    rng = random.Random(seed)
    trials.write(specsets.trial_sections(trials.topic_prefix, trials.user_prefix, target.brokers, 0, seed))
    first = trials.apply("trial-0-apply")
    steps = steps_of(first.stderr.splitlines(), 5)
    results = []
    if first.returncode != 0:
        results.append(KillTrial(0, 0.0, "unkilled first apply", False, first.stderr[-500:]))
    trial = killed = 0
    while killed < count and trial < 2 * count:
        trial += 1
        trials.write(specsets.trial_sections(trials.topic_prefix, trials.user_prefix, target.brokers, trial, seed))
        where = stratified(trial, count, rng.random())
        kill = trials.killed_apply(apply_point(where, rng.random(), steps), f"trial-{trial}-killed")
        steps = steps_of(kill.events, steps)
        again = trials.apply(f"trial-{trial}-apply")
        plan = trials.run("plan", f"trial-{trial}-plan")
        converged = again.returncode == 0 and plan.returncode == 0
        detail = "" if converged else (again.stderr or plan.stdout)[-500:]
        results.append(KillTrial(trial, kill.after_s, kill.reached, converged, detail))
        killed += kill.reached != FINISHED
        progress(f"  trial {trial}: killed after {kill.after_s:.1f} s ({kill.reached}); "
                 f"{'converged' if converged else 'DID NOT converge'}")
    trials.write(specsets.empty_sections(trials.user_prefix))
    cleanup = trials.apply("trials-cleanup")
    if cleanup.returncode != 0:
        results.append(KillTrial(trial + 1, 0.0, "cleanup", False, cleanup.stderr[-500:]))
    return results, trials.passwords
