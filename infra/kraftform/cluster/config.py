"""Broker and controller `server.properties`, rendered as sorted, reviewable text. Pure.

Security posture, on every node:
- no PLAINTEXT listener anywhere: clients speak SASL_SSL (SCRAM); the inter-broker listener is mutual TLS
  with the nodes' own certificates (as Strimzi does), so no client user gets in there, whatever its SCRAM
  credential (those are cluster-wide); the controller listener is mutual TLS too (or SASL_SSL with PLAIN;
  SCRAM cannot work there, KAFKA-15513);
- StandardAuthorizer with `allow.everyone.if.no.acl.found=false`: what no ACL allows is denied;
- the admin and every node principal are super users, nobody else.

No secret appears in the rendered properties: passwords are read through Kafka's FileConfigProvider from a
separate `secrets.properties` (mode 0600), so the main file can be reviewed, diffed and snapshot-tested.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.cluster.identity import MAPPING_KEY, PRINCIPAL_MAPPING
from kraftform.cluster.topology import CLIENT_PORT, CONTROLLER_PORT, INTERNAL_PORT, Node, Topology
from kraftform.definitions.server_configs import definition
from kraftform.specset.model import CONTROLLER_USER, NODE_PRINCIPAL

SECRETS_FILE = "secrets.properties"
LISTENER_PORTS = {"CLIENT": CLIENT_PORT, "INTERNAL": INTERNAL_PORT, "CONTROLLER": CONTROLLER_PORT}
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"

LOG4J2_CONFIG = """\
Configuration:
  status: warn
  Appenders:
    Console:
      name: STDOUT
      target: SYSTEM_OUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.controller
        level: INFO
      - name: state.change.logger
        level: WARN
"""

# Log4j 2 reads YAML only with jackson-dataformat-yaml on the class path, which Kafka ships.
LOG4J2_FILE = "log4j2.yaml"


@dataclass(frozen=True)
class NodePaths:
    """Where a node finds its files; absolute paths inside the container or on the host."""

    config_dir: str
    data_dir: str
    #: The Prometheus JMX exporter agent's jar ("": the node runs without it).
    metrics_agent: str = ""

    @property
    def keystore(self) -> str:
        return f"{self.config_dir}/tls/node.pem"

    @property
    def truststore(self) -> str:
        return f"{self.config_dir}/tls/ca.pem"

    @property
    def secrets(self) -> str:
        return f"{self.config_dir}/{SECRETS_FILE}"

    @property
    def server_properties(self) -> str:
        return f"{self.config_dir}/server.properties"


@dataclass(frozen=True)
class Addressing:
    """How nodes reach each other and where they listen: container hostnames, or loopback addresses."""

    advertised: Mapping[str, str]  # node name -> host other nodes and clients use
    bind: Mapping[str, str]  # node name -> address to listen on
    external_host: str | None = None  # host-side name for the external listener, when published
    #: Node name -> listener name -> port, for nodes sharing an address (a host's nodes); Kafka's fixed ports
    #: (CLIENT_PORT, INTERNAL_PORT, CONTROLLER_PORT) for the rest.
    ports: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def port(self, node_name: str, listener: str) -> int:
        return self.ports.get(node_name, {}).get(listener) or LISTENER_PORTS[listener]

    def controller(self, node_name: str) -> str:
        """host:port of a controller's listener, as voters and bootstrap servers name it."""
        return f"{self.advertised[node_name]}:{self.port(node_name, 'CONTROLLER')}"

    def external_port(self, topo: Topology, node: Node) -> int | None:
        listener = topo.cluster.security.external_listener
        if self.external_host is None or not listener.enabled or node.broker_index is None:
            return None
        return listener.base_port + node.broker_index


def _secret(paths: NodePaths, key: str) -> str:
    return f"${{file:{paths.secrets}:{key}}}"


def super_users(topo: Topology) -> list[str]:
    users = [topo.cluster.security.admin_user, NODE_PRINCIPAL]
    if topo.cluster.security.controller_auth == "plain":
        users.append(CONTROLLER_USER)
    return [f"User:{u}" for u in users]


def _listeners(topo: Topology, node: Node, addr: Addressing) -> dict[str, str]:
    bind, host = addr.bind[node.name], addr.advertised[node.name]
    mech = topo.cluster.security.sasl_mechanism
    controller_protocol = "SSL" if topo.cluster.security.controller_auth == "mtls" else "SASL_SSL"
    listeners: list[str] = []
    advertised: list[str] = []
    protocols = {"CONTROLLER": controller_protocol}
    if node.is_broker:
        client, internal = addr.port(node.name, "CLIENT"), addr.port(node.name, "INTERNAL")
        listeners += [f"CLIENT://{bind}:{client}", f"INTERNAL://{bind}:{internal}"]
        advertised += [f"CLIENT://{host}:{client}", f"INTERNAL://{host}:{internal}"]
        protocols |= {"CLIENT": "SASL_SSL", "INTERNAL": "SSL"}
        port = addr.external_port(topo, node)
        if port is not None:
            listeners.append(f"EXTERNAL://{bind}:{port}")
            advertised.append(f"EXTERNAL://{addr.external_host}:{port}")
            protocols["EXTERNAL"] = "SASL_SSL"
    if node.is_controller:
        port = addr.port(node.name, "CONTROLLER")
        listeners.append(f"CONTROLLER://{bind}:{port}")
        advertised.append(f"CONTROLLER://{host}:{port}")
    out = {
        "listeners": ",".join(listeners),
        "advertised.listeners": ",".join(advertised),
        "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in sorted(protocols.items())),
        "controller.listener.names": "CONTROLLER",
    }
    if node.is_broker:
        out |= {"inter.broker.listener.name": "INTERNAL", "sasl.enabled.mechanisms": mech}
    return out


def _sasl(topo: Topology, node: Node, paths: NodePaths) -> dict[str, str]:
    mech = topo.cluster.security.sasl_mechanism.lower()
    out: dict[str, str] = {}
    if node.is_broker:
        # Only a certificate the cluster's CA signed gets in, and only a node's is a node (identity.py).
        out["listener.name.internal.ssl.client.auth"] = "required"
        for listener in ("client", "external"):
            out[f"listener.name.{listener}.{mech}.sasl.jaas.config"] = f"{SCRAM_LOGIN} required;"
    if topo.cluster.security.controller_auth == "mtls":
        out["listener.name.controller.ssl.client.auth"] = "required"
    else:
        password = _secret(paths, "controller.password")
        out |= {
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": (
                f'{PLAIN_LOGIN} required username="{CONTROLLER_USER}" password="{password}" '
                f'user_{CONTROLLER_USER}="{password}";'),
        }
    return out


def render_properties(topo: Topology, node: Node, addr: Addressing, paths: NodePaths,
                      mapping: str = PRINCIPAL_MAPPING) -> dict[str, str]:
    """Every setting of one node, as Kafka reads them; `mapping` the principal mapping rules (identity.py)."""
    c = topo.cluster
    brokers = len(topo.brokers)
    internal_rf = min(3, brokers)
    voters = ",".join(f"{n.node_id}@{addr.controller(n.name)}" for n in topo.controllers)
    props = {
        "process.roles": ",".join(r for r in ("broker", "controller") if r in node.roles),
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "log.dirs": paths.data_dir,
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        # TLS: PEM stores, no store passwords; hostnames verified by clients and peers.
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": paths.keystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": paths.truststore,
        "ssl.endpoint.identification.algorithm": "https",
        # Only a node's certificate is the node principal (identity.py; one principal for every node, as Strimzi's
        # brokers share one: a broker added later is a super user on nodes that started before it, so growing the
        # cluster restarts nobody).
        MAPPING_KEY: mapping,
        # Deny by default.
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        "super.users": ";".join(super_users(topo)),
        **_listeners(topo, node, addr),
        **_sasl(topo, node, paths),
        # Controllers too: in KRaft they elect leaders, and with eligible leader replicas (KIP-966) the
        # controllers write their own min.insync.replicas as the cluster-wide default, which wins over a
        # value set on brokers only.
        "min.insync.replicas": str(c.defaults.min_insync_replicas),
        "unclean.leader.election.enable": "false",
    }
    if node.is_broker:
        props |= {
            "auto.create.topics.enable": "false",
            "default.replication.factor": str(min(c.defaults.replication_factor, brokers)),
            "num.partitions": str(c.defaults.partitions),
            "offsets.topic.replication.factor": str(internal_rf),
            "transaction.state.log.replication.factor": str(internal_rf),
            "transaction.state.log.min.isr": str(min(2, internal_rf)),
            "share.coordinator.state.topic.replication.factor": str(internal_rf),
            "share.coordinator.state.topic.min.isr": str(min(2, internal_rf)),
            # Throw-away clusters start serving groups at once; production readers rebalance anyway.
            "group.initial.rebalance.delay.ms": "0",
            # A broker whose controllers are slow to form a quorum (a loaded machine, a node restarted in a roll)
            # keeps trying for 5 minutes instead of exiting after Kafka's 60 s: nothing restarts a local JVM.
            "initial.broker.registration.timeout.ms": "300000",
        }
        if node.rack:
            props["broker.rack"] = node.rack
        # The read-only settings the specs declare: read at start, so they are the nodes' own; the dynamic
        # ones are applied through the Admin protocol instead (a change then restarts nothing).
        props |= {k: v for k, v in c.broker_config.items() if (d := definition(k)) is not None and not d.dynamic}
    if node.is_controller:
        props |= c.controller_config
    props |= c.node_config.get(node.name, {})
    return props


def properties_text(props: Mapping[str, str], header: str = "") -> str:
    """Sorted `key=value` lines, so a change shows as a one-line diff."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"{key}={_escape(value)}" for key, value in sorted(props.items())]
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    """A value as java.util.Properties reads it back: backslashes, line breaks and a leading blank escaped,
    and everything outside ASCII as \\uXXXX (Kafka loads server.properties as ISO-8859-1)."""
    out = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    out = "".join(c if ord(c) < 128 else "".join(f"\\u{u:04x}" for u in _utf16(c)) for c in out)
    return "\\" + out if out.startswith((" ", "\f")) else out


def _utf16(char: str) -> list[int]:
    data = char.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def secrets_properties(topo: Topology, controller_password: str) -> str:
    """The secret half of a node's configuration (mode 0600)."""
    values = {}
    if topo.cluster.security.controller_auth == "plain":
        values["controller.password"] = controller_password
    return properties_text(values)
