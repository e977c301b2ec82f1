"""The standalone Spark cluster's secret under `pulumi up`: made once, kept for the stack's life."""

from __future__ import annotations

from kraftform.pulumi.consumers import SparkSecretProvider


def test_the_spark_secret_is_made_once_random_and_kept_until_the_cluster_is_another() -> None:
    provider = SparkSecretProvider()
    made = provider.create({"cluster": "platform", "secret": None})
    other = provider.create({"cluster": "platform", "secret": None})
    assert made.outs is not None and other.outs is not None
    secret = made.outs["secret"]
    assert len(secret) == 64 and int(secret, 16) >= 0 and secret != other.outs["secret"]
    # Pulumi hands diff the old outputs: the same cluster is no change, another one a replacement (a new secret).
    kept = provider.diff("platform", made.outs, {"cluster": "platform", "secret": None})
    assert not kept.changes
    renamed = provider.diff("platform", made.outs, {"cluster": "analytics", "secret": None})
    assert renamed.changes and renamed.replaces == ["cluster"]
