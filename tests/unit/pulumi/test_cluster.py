"""The cluster secrets provider, called as the engine calls it (pure: it makes keys, talks to nothing)."""

from __future__ import annotations

import dataclasses

from cryptography import x509

from kraftform.cluster.certificates import issue
from kraftform.cluster.identity import is_node_certificate
from kraftform.cluster.render import secrets_from_dict
from kraftform.declared import load_specs
from kraftform.pulumi.cluster import ClusterSecretsProvider, secrets_inputs

from ...conftest import EXAMPLE_SPECS


def test_a_second_run_keeps_the_keys_and_passwords() -> None:
    spec = load_specs(EXAMPLE_SPECS).cluster
    provider = ClusterSecretsProvider()
    inputs = secrets_inputs(spec, None)
    made = provider.create(inputs)
    assert made.outs is not None
    secrets = secrets_from_dict(made.outs)
    assert secrets.admin_password and sorted(secrets.node_keys) == sorted(
        [f"platform-controller-{i}" for i in range(3)] + [f"platform-broker-{i}" for i in range(3)])
    # The engine diffs the stored outputs against the program's inputs: nothing changed, nothing replaced
    # (a generated admin password must not read as a change of the requested one).
    again = provider.diff("platform", made.outs, secrets_inputs(spec, None))
    assert again.changes is False and again.replaces == []


def test_a_grown_cluster_keeps_its_ca_id_passwords_and_keys() -> None:
    spec = load_specs(EXAMPLE_SPECS).cluster
    provider = ClusterSecretsProvider()
    made = provider.create(secrets_inputs(spec, "chosen-admin-password"))
    assert made.outs is not None and made.outs["admin_password"] == "chosen-admin-password"
    grown_inputs = secrets_inputs(dataclasses.replace(spec, brokers=4), "chosen-admin-password")
    diff = provider.diff("platform", made.outs, grown_inputs)
    assert diff.changes is True and diff.replaces == []  # an update, not a new cluster
    grown = provider.update("platform", made.outs, grown_inputs)
    assert grown.outs is not None
    before, after = secrets_from_dict(made.outs), secrets_from_dict(grown.outs)
    assert (after.cluster_id, after.ca, after.admin_password, after.controller_password) == (
        before.cluster_id, before.ca, before.admin_password, before.controller_password)
    assert {n: k for n, k in after.node_keys.items() if n != "platform-broker-3"} == dict(before.node_keys)
    new_cert = x509.load_pem_x509_certificate(after.node_keys["platform-broker-3"].cert_pem.encode())
    ca_cert = x509.load_pem_x509_certificate(before.ca.cert_pem.encode())
    new_cert.verify_directly_issued_by(ca_cert)  # raises unless signed by the cluster's CA


def test_another_name_is_another_cluster_and_the_admin_password_cannot_change() -> None:
    spec = load_specs(EXAMPLE_SPECS).cluster
    provider = ClusterSecretsProvider()
    made = provider.create(secrets_inputs(spec, None))
    assert made.outs is not None
    renamed = provider.diff("platform", made.outs, secrets_inputs(dataclasses.replace(spec, name="other"), None))
    assert renamed.replaces == ["name"]
    refused = provider.check(secrets_inputs(spec, ""), secrets_inputs(spec, "new-admin-password"))
    assert [f.property for f in refused.failures] == [""]  # Pulumi then prints the sentence first
    assert refused.failures[0].reason.startswith("kraftform:adminPassword cannot change once the cluster exists")
    assert provider.check({}, secrets_inputs(spec, "first-admin-password")).failures == []


def test_an_upgrade_is_no_change_to_the_clusters_secrets() -> None:
    """`kafka_version: 4.3.1 -> 4.4.0` keeps every key: the secrets resource is not updated, so nothing made from
    its outputs (the network, the consumers' containers) is previewed as unknown or replaced."""
    spec = load_specs(EXAMPLE_SPECS).cluster
    provider = ClusterSecretsProvider()
    made = provider.create(secrets_inputs(dataclasses.replace(spec, kafka_version="4.3.1"), None))
    assert made.outs is not None
    upgraded = provider.diff("platform", made.outs, secrets_inputs(dataclasses.replace(spec, kafka_version="4.4.0"),
                                                                    None))
    assert upgraded.changes is False


def test_a_stack_made_before_the_node_identity_gets_node_certificates_and_keeps_its_ca() -> None:
    """A stack's secrets from before the node identity (cluster/identity.py): node keys named by the node alone. The
    same inputs are a change (an update, not a new cluster) whose outputs carry node certificates from the same CA;
    the nodes' update then rolls them in."""
    spec = load_specs(EXAMPLE_SPECS).cluster
    provider = ClusterSecretsProvider()
    made = provider.create(secrets_inputs(spec, None))
    assert made.outs is not None
    before = secrets_from_dict(made.outs)
    legacy = {**made.outs, "node_keys": {name: {"cert": pair.cert_pem, "key": pair.key_pem}
                                         for name, pair in ((n, issue(before.ca, n)) for n in before.node_keys)}}
    assert not any(is_node_certificate(k.cert_pem) for k in secrets_from_dict(legacy).node_keys.values())
    diff = provider.diff("platform", legacy, secrets_inputs(spec, None))
    assert diff.changes is True and diff.replaces == []
    moved = provider.update("platform", legacy, secrets_inputs(spec, None))
    assert moved.outs is not None
    after = secrets_from_dict(moved.outs)
    assert after.ca == before.ca and after.cluster_id == before.cluster_id
    assert all(is_node_certificate(k.cert_pem) for k in after.node_keys.values())
    assert provider.diff("platform", moved.outs, secrets_inputs(spec, None)).changes is False
