"""Resilience: wrong specs never crash a command, and an apply killed anywhere converges on the next run.

The spec sets are mutations of the user's own spec directory, each run through `validate`, `diff` and a
live `plan` in this process, exactly as the CLI's entry point runs them; a crash is any exception escaping
it, a traceback in its output, or an exit status outside 0/1/2. The killed applies are real `kraftform
apply` processes SIGKILLed after a random delay, then a full apply, then a plan that must be empty.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import secrets
import shutil
import signal
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
from kraftform.verification.mutations import mutated_set
from kraftform.verification.target import Target

Progress = Callable[[str], None]
#: A trial whose apply ended before its kill: it does not count as a killed apply.
FINISHED = "finished before the kill"
EntryPoint = Callable[[Sequence[str]], int]
#: What `kraftform apply` reports as it goes (on stderr, between the plan it prints and its last line).
PROGRESS = re.compile(r"^(\[\d+/\d+\] |observed |waiting |Applied )")
_STEP = re.compile(r"^\[\d+/\d+\] (\w+): (done)?")


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

    def killed_apply(self, after_s: float, log_name: str) -> str:
        """Start an apply, SIGKILL it after `after_s` seconds; the last step it reported."""
        log_path = self.target.workdir / "logs" / f"{log_name}.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(self.command("apply", "--auto-approve", "--allow-destructive"),
                                       stdout=log, stderr=subprocess.STDOUT, env=self.env)
            try:
                process.wait(timeout=after_s)
                return FINISHED
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        steps = [line.strip() for line in log_path.read_text().splitlines() if PROGRESS.match(line)]
        return steps[-1] if steps else "before its first step"


def kill_trials(target: Target, cluster: dict[str, Any], count: int, seed: int, progress: Progress
                ) -> tuple[list[KillTrial], dict[str, str]]:
    """`count` applies SIGKILLed at random points, each followed by an apply and a plan that must be empty (a
    trial whose apply finished before its kill is reported, and one more is run). The points are stratified: the
    k-th kill falls at a random point of the k-th of `count` equal slices of an apply, so a few trials still reach
    its start, its middle and its end. Returns the trials and the passwords the users were given (for the secret
    scan)."""
    trials = Trials(target, cluster, seed)
    rng = random.Random(seed)
    # A first, unkilled apply measures how long one takes, so the kills fall inside one.
    trials.write(specsets.trial_sections(trials.topic_prefix, trials.user_prefix, target.brokers, 0, seed))
    began = time.monotonic()
    first = trials.apply("trial-0-apply")
    full = max(1.0, time.monotonic() - began)
    results = []
    if first.returncode != 0:
        results.append(KillTrial(0, 0.0, "unkilled first apply", False, first.stderr[-500:]))
    trial = killed = 0
    while killed < count and trial < 2 * count:
        trial += 1
        trials.write(specsets.trial_sections(trials.topic_prefix, trials.user_prefix, target.brokers, trial, seed))
        slice_ = (trial - 1 + rng.random()) / count if trial <= count else rng.random()
        after = (0.1 + 0.85 * slice_) * full
        reached = trials.killed_apply(after, f"trial-{trial}-killed")
        again = trials.apply(f"trial-{trial}-apply")
        plan = trials.run("plan", f"trial-{trial}-plan")
        converged = again.returncode == 0 and plan.returncode == 0
        detail = "" if converged else (again.stderr or plan.stdout)[-500:]
        results.append(KillTrial(trial, after, reached, converged, detail))
        killed += reached != FINISHED
        progress(f"  trial {trial}: killed after {after:.1f} s ({reached}); "
                 f"{'converged' if converged else 'DID NOT converge'}")
    trials.write(specsets.empty_sections(trials.user_prefix))
    cleanup = trials.apply("trials-cleanup")
    if cleanup.returncode != 0:
        results.append(KillTrial(trial + 1, 0.0, "cleanup", False, cleanup.stderr[-500:]))
    return results, trials.passwords
