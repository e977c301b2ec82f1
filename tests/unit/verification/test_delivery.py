from __future__ import annotations

from kraftform.verification.delivery import account


def test_lost_is_acknowledged_and_never_read() -> None:
    d = account(acked=[0, 1, 2, 3, 4], read=[0, 1, 1, 3, 7])
    assert (d.acked, d.read, d.lost, d.duplicates, d.unacked_read, d.lost_sample) == (5, 5, 2, 1, 1, (2, 4))


def test_everything_read_once_is_clean() -> None:
    d = account(acked=range(1000), read=list(range(1000)))
    assert (d.lost, d.duplicates, d.unacked_read) == (0, 0, 0)
