"""Container specs are data: check what the Docker runtime and Pulumi will be handed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cryptography import x509

from kraftform.cluster.containers import (
    CONFIG_DIR,
    DATA_DIR,
    HOST_NETWORK,
    LABEL_HOST,
    bootstrap_servers,
    client_bootstrap,
    container_specs,
    docker_addressing,
    external_bootstrap,
    in_containers,
    metrics_endpoints,
    network_name,
    node_metrics,
    stack_image,
)
from kraftform.cluster.render import make_secrets
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.specset.model import SCRAM_ANCHORS, Host
from kraftform.versions import KAFKA_VERSION

CLUSTER = load_specs(Path(__file__).resolve().parents[2] / "fixtures" / "cluster").cluster


def test_one_container_per_node_on_one_network_with_own_volume() -> None:
    topo = topology(CLUSTER)
    secrets = make_secrets(topo, docker_addressing(topo), admin_password="s3cret-admin")
    specs = container_specs(topo, secrets, "img:1")
    assert [s.name for s in specs] == [n.name for n in topo.nodes]
    assert {s.network for s in specs} == {"kraftform-kftest"}
    assert len({s.volume for s in specs}) == 6 and {s.volume_path for s in specs} == {DATA_DIR}
    brokers = [s for s in specs if "broker" in s.labels["dev.kraftform.roles"]]
    published = [(p.container_port, p.host_port, p.host_ip) for s in specs for p in s.ports]
    # Each broker's external listener, and every node's metrics, on loopback, at ports derived from node ids.
    assert published == [(9404, 29093 + 400 + i, "127.0.0.1") for i in range(3)] + [
        port for i, listener in enumerate((29092, 29093, 29094))
        for port in ((listener, listener, "127.0.0.1"), (9404, 29092 + 300 + i + 1, "127.0.0.1"))]
    assert bootstrap_servers(specs, "localhost") == "localhost:29092,localhost:29093,localhost:29094"
    assert metrics_endpoints(specs)["kftest-broker-0"] == ("broker", "127.0.0.1:29393")
    assert len(brokers) == 3


def test_secrets_only_in_secret_files_never_in_commands_or_labels() -> None:
    topo = topology(CLUSTER)
    secrets = make_secrets(topo, docker_addressing(topo), admin_password="s3cret-admin")
    for spec in container_specs(topo, secrets):
        visible = " ".join(spec.command) + repr(spec) + str(spec.labels)
        for secret in (secrets.admin_password, secrets.controller_password, secrets.node_keys[spec.name].key_pem):
            assert secret not in visible
        by_path = {f.path: f for f in spec.files}
        assert by_path[f"{CONFIG_DIR}/tls/node.pem"].secret and by_path[f"{CONFIG_DIR}/tls/node.pem"].mode == 0o600
        assert by_path[f"{CONFIG_DIR}/format.args"].secret
        format_args = by_path[f"{CONFIG_DIR}/format.args"].content.splitlines()
        assert any("s3cret-admin" in arg for arg in format_args)
        # The SCRAM anchors first (specset/model.py), in each mechanism, with a password that is not the admin's.
        assert [arg.split("[name=")[0] for arg in format_args[1:4:2]] == ["SCRAM-SHA-256=", "SCRAM-SHA-512="]
        assert [arg.split("[name=")[1].split(",")[0] for arg in format_args[1:4:2]] == sorted(SCRAM_ANCHORS.values())
        assert format_args[::2] == ["--add-scram"] * 3 and "s3cret-admin" not in "".join(format_args[:4])
        assert not by_path[f"{CONFIG_DIR}/server.properties"].secret
        assert secrets.admin_password not in by_path[f"{CONFIG_DIR}/server.properties"].content
        assert spec.command[:2] == ("sh", "-c") and "kafka.Kafka" in spec.command[2]


@pytest.mark.parametrize(("host", "published_on"), [("localhost", "127.0.0.1"), ("kafka.example.test", "0.0.0.0")])
def test_one_container_description_honours_the_external_listener_for_every_runner(host: str,
                                                                                   published_on: str) -> None:
    """The Docker runtime and the Pulumi component both run `in_containers(spec)`: the external listener is
    on even when the spec leaves it off (clients outside the Docker network have no other way in), at the
    spec's host, which the brokers advertise, their certificates name and the bootstrap servers use."""
    from cryptography import x509

    from kraftform.cluster.render import secrets_from_dict
    from kraftform.pulumi.cluster import ClusterSecretsProvider, secrets_inputs
    from kraftform.specset.model import ExternalListener, Security

    spec = dataclasses.replace(CLUSTER, security=Security(external_listener=ExternalListener(False, host, 29092)))
    topo = topology(in_containers(spec))
    made = ClusterSecretsProvider().create(secrets_inputs(spec, None))  # as the Pulumi component makes them
    assert made.outs is not None
    specs = container_specs(topo, secrets_from_dict(made.outs))
    brokers = [s for s in specs if "broker" in s.labels["dev.kraftform.roles"]]
    assert [(p.host_port, p.host_ip) for s in brokers for p in s.ports if p.container_port != 9404] == [
        (29092 + i, published_on) for i in range(len(brokers))]
    assert bootstrap_servers(specs, host) == ",".join(f"{host}:{29092 + i}" for i in range(len(brokers)))
    for broker in brokers:
        props = next(f.content for f in broker.files if f.path.endswith("server.properties"))
        assert f"EXTERNAL://{host}:" in props
        cert = x509.load_pem_x509_certificate(secrets_from_dict(made.outs).node_keys[broker.name].cert_pem.encode())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert host in names.get_values_for_type(x509.DNSName)


def test_a_stacks_image_follows_the_specs_kafka_version() -> None:
    """Under Pulumi `official` and `local` name the image of the declared release, so an older kafka_version
    never runs the pinned jars under its own name and an upgrade is a new image (a roll)."""
    assert stack_image("official", "4.3.1") == "apache/kafka:4.3.1"
    assert stack_image("local", "4.3.1") == "kraftform/kafka:4.3.1"
    assert stack_image("local", KAFKA_VERSION) == f"kraftform/kafka:{KAFKA_VERSION}"
    assert stack_image("registry.example/kafka:mine", "4.3.1") == "registry.example/kafka:mine"


@pytest.mark.parametrize("shape", [{}, {"brokers": 5, "controllers": 1}, {"mode": "combined", "controllers": 3}])
def test_the_bootstrap_servers_and_network_come_from_the_topology_alone(shape: dict[str, object]) -> None:
    """What Pulumi knows in a preview (from the spec) is what the rendered containers publish."""
    spec = dataclasses.replace(in_containers(CLUSTER), **shape)  # type: ignore[arg-type]
    topo = topology(spec)
    made = container_specs(topo, make_secrets(topo, docker_addressing(topo)))
    assert external_bootstrap(topo) == bootstrap_servers(made, spec.security.external_listener.host)
    assert {c.network for c in made} == {network_name(spec.name)}


def test_on_hosts_each_node_listens_on_its_hosts_address_at_ports_of_its_own() -> None:
    hosts = tuple(Host(f"h{i}", f"unix:///run/h{i}.sock", f"10.9.0.{i + 1}", (rack,))
                  for i, rack in enumerate(CLUSTER.racks))
    listener = dataclasses.replace(CLUSTER.security.external_listener, host="localhost")
    cluster = dataclasses.replace(CLUSTER, hosts=hosts, security=dataclasses.replace(CLUSTER.security,
                                                                                      external_listener=listener))
    topo = topology(in_containers(cluster))
    secrets = make_secrets(topo, docker_addressing(topo), admin_password="s3cret-admin")
    specs = {s.name: s for s in container_specs(topo, secrets, "img:1")}
    broker, controller = specs["kftest-broker-1"], specs["kftest-controller-2"]
    # The host's own network: nothing published, no bridge, the host named on the container.
    assert {s.network for s in specs.values()} == {HOST_NETWORK} and all(not s.ports for s in specs.values())
    assert (broker.host, controller.host, broker.labels[LABEL_HOST]) == ("h1", "h2", "h1")
    files = {f.path: f.content for f in broker.files}
    properties = dict(line.split("=", 1) for line in files[f"{CONFIG_DIR}/server.properties"].splitlines()
                      if not line.startswith("#"))
    assert properties["listeners"] == "CLIENT://10.9.0.2:29093,INTERNAL://10.9.0.2:29193"
    assert properties["advertised.listeners"] == "CLIENT://10.9.0.2:29093,INTERNAL://10.9.0.2:29193"
    assert properties["controller.quorum.bootstrap.servers"] == "10.9.0.1:29292,10.9.0.2:29293,10.9.0.3:29294"
    assert "=10.9.0.2:29394:" in " ".join(broker.command) and "=10.9.0.3:29495:" in " ".join(controller.command)
    assert broker.healthcheck is not None and "':71A5 " in broker.healthcheck.test[1]  # its own port, 29093
    # Clients anywhere reach the brokers' client listeners at their hosts; metrics on the hosts' addresses.
    assert client_bootstrap(topo, tuple(specs.values())) == "10.9.0.1:29092,10.9.0.2:29093,10.9.0.3:29094"
    assert node_metrics(topo, tuple(specs.values()))["kftest-controller-0"] == ("controller", "10.9.0.1:29493")
    # Each node's certificate names its host's address, which peers and clients verify.
    sans = x509.load_pem_x509_certificate(secrets.node_keys["kftest-broker-1"].cert_pem.encode()).extensions
    names = sans.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "10.9.0.2" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
