from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kraftform.verification.secretscan import CommandLineSampler, Leak, find_leaks, held


def test_a_password_is_found_by_line_and_named_by_label_only() -> None:
    text = "started\npassword=s3cret-Value-42 in a log\n-----BEGIN PRIVATE KEY-----\n"
    leaks = find_leaks("broker.log", text, {"admin password": "s3cret-Value-42", "short": "abc"})
    assert leaks == [Leak("broker.log", 2, "admin password"), Leak("broker.log", 3, "a PEM private key")]
    assert all("s3cret" not in str(leak) for leak in leaks)


def test_clean_text_and_short_values_find_nothing() -> None:
    assert find_leaks("plan.txt", "Plan: No changes.\nabc\n", {"short": "abc", "pw": "long-enough-pw"}) == []


def test_a_secret_is_held_only_in_an_owner_only_file_of_a_state_directory(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    for where, mode in ((state / "admin.properties", 0o600), (state / "server.log", 0o644),
                        (tmp_path / "elsewhere.properties", 0o600)):
        where.write_text("password=x")
        where.chmod(mode)
    assert held(state / "admin.properties", [state])
    assert not held(state / "server.log", [state])  # readable by others: a leak
    assert not held(tmp_path / "elsewhere.properties", [state])  # owner-only, but outside a state directory


def test_the_sampler_sees_a_command_line_that_lived_a_moment() -> None:
    marker = "kraftform-sampler-marker-" + str(os.getpid())
    with CommandLineSampler(interval=0.05) as sampler:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.5)", marker], check=True)
    assert any(marker in line for line in sampler.seen) and sampler.samples > 1
    assert find_leaks("a process's command line", "\n".join(sampler.seen), {"marker": marker})
