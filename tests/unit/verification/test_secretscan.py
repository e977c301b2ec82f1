from __future__ import annotations

from kraftform.verification.secretscan import Leak, find_leaks


def test_a_password_is_found_by_line_and_named_by_label_only() -> None:
    text = "started\npassword=s3cret-Value-42 in a log\n-----BEGIN PRIVATE KEY-----\n"
    leaks = find_leaks("broker.log", text, {"admin password": "s3cret-Value-42", "short": "abc"})
    assert leaks == [Leak("broker.log", 2, "admin password"), Leak("broker.log", 3, "a PEM private key")]
    assert all("s3cret" not in str(leak) for leak in leaks)


def test_clean_text_and_short_values_find_nothing() -> None:
    assert find_leaks("plan.txt", "Plan: No changes.\nabc\n", {"short": "abc", "pw": "long-enough-pw"}) == []
