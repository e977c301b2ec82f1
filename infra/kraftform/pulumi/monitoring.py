"""`kraftform:monitoring`: Prometheus and kraftform's exporter as containers on the stack's cluster network.

Prometheus (Debian's package, in the locally built `kraftform/prometheus` image) scrapes every node's JMX exporter
by its container name and kraftform's exporter, and evaluates the rules generated from the specs
(`monitoring.alerts`, the same file `kraftform monitoring rules` prints); its web port is published on
127.0.0.1 only. The exporter runs `kraftform monitoring exporter` in the consumers' image (kraftform is in
it), with the spec files, an admin client config (a secret upload) and, when consumers are deployed, their
volume, where their checkpoints are: consumer lag and certificate expiry reach Prometheus from it. A changed
spec changes the uploads, so `pulumi up` replaces these two containers alone; the time series volume stays.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_docker as docker
import yaml

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import (
    LABEL_CLUSTER,
    ContainerFile,
    ContainerSpec,
    Healthcheck,
    PortBinding,
    network_bootstrap,
)
from kraftform.cluster.jmx import METRICS_PORT
from kraftform.cluster.topology import topology
from kraftform.monitoring.alerts import rules_yaml
from kraftform.monitoring.scrape import Endpoint, prometheus_config
from kraftform.pulumi.cluster import KafkaCluster, container_resource
from kraftform.runtime.engines.images import PROMETHEUS_IMAGE
from kraftform.spark.containers import WORK_DIR
from kraftform.spark.containers import consumers_volume as consumers_volume_name
from kraftform.specset.model import SpecSet

PROMETHEUS_PORT = 9090
EXPORTER_PORT = 9405
CONFIG = "/etc/prometheus/prometheus.yml"
RULES = "/etc/prometheus/rules.yml"
TSDB = "/prometheus"
SPECS = "/etc/kraftform/specs"
ADMIN_CONFIG = "/etc/kraftform/admin.properties"
CA_FILE = "/etc/kraftform/ca.pem"
LABEL_MONITORING = "dev.kraftform.monitoring"


def prometheus_name(cluster: str) -> str:
    return f"{cluster}-prometheus"


def exporter_name(cluster: str) -> str:
    return f"{cluster}-kraftform-exporter"


def prometheus_container(specs: SpecSet, network: str, port: int, interval_s: float = 15.0) -> ContainerSpec:
    """Prometheus scraping every node by container name, on the cluster's network."""
    cluster = specs.cluster.name
    nodes = [Endpoint(n.name, ",".join(n.roles), f"{n.name}:{METRICS_PORT}") for n in topology(specs.cluster).nodes]
    config = prometheus_config(cluster, nodes, f"{exporter_name(cluster)}:{EXPORTER_PORT}", RULES,
                               f"{TSDB}/spark-targets/*.json", interval_s)
    name = prometheus_name(cluster)
    return ContainerSpec(
        name=name, hostname=name, image=PROMETHEUS_IMAGE,
        command=(f"--config.file={CONFIG}", f"--storage.tsdb.path={TSDB}", "--storage.tsdb.retention.time=15d",
                 f"--web.listen-address=0.0.0.0:{PROMETHEUS_PORT}"),
        network=network, aliases=(name,), volume=f"{name}-data", volume_path=TSDB,
        files=(ContainerFile(CONFIG, yaml.safe_dump(config, sort_keys=False)), ContainerFile(RULES, rules_yaml(specs))),
        ports=(PortBinding(PROMETHEUS_PORT, port),),
        healthcheck=Healthcheck(("CMD-SHELL", f"cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q "
                                              f"':{PROMETHEUS_PORT:04X} [0-9A-F]*:[0-9A-F]* 0A'")),
        labels={LABEL_CLUSTER: cluster, LABEL_MONITORING: "prometheus"})


def spec_files(specs: SpecSet, specs_dir: Path) -> tuple[ContainerFile, ...]:
    """The spec directory's files as uploads (its schemas excepted): what the exporter loads."""
    root = specs_dir.resolve()
    return tuple(ContainerFile(f"{SPECS}/{Path(f).resolve().relative_to(root)}", Path(f).read_text())
                 for f in specs.files)


def exporter_container(specs: SpecSet, files: tuple[ContainerFile, ...], network: str, image: str,
                       admin_password: str, ca_pem: str, volume: str) -> ContainerSpec:
    """`kraftform monitoring exporter` as the cluster's admin over the brokers' in-network listener, with the
    consumers' checkpoints at the path the consumers write them."""
    cluster = specs.cluster
    name = exporter_name(cluster.name)
    admin = Connection.scram(network_bootstrap(n.name for n in topology(cluster).brokers), cluster.security.admin_user,
                             admin_password, cluster.security.sasl_mechanism, CA_FILE).java_properties()
    return ContainerSpec(
        name=name, hostname=name, image=image,
        command=("kraftform", "monitoring", "exporter", SPECS, "--command-config", ADMIN_CONFIG, "--data-dir", WORK_DIR,
                 "--listen", f"0.0.0.0:{EXPORTER_PORT}"),
        network=network, aliases=(name,), volume=volume, volume_path=WORK_DIR,
        files=(*files, ContainerFile(CA_FILE, ca_pem), ContainerFile(ADMIN_CONFIG, admin, 0o600, secret=True)),
        labels={LABEL_CLUSTER: cluster.name, LABEL_MONITORING: "exporter"})


class Monitoring(pulumi.ComponentResource):
    """Prometheus and the exporter beside the stack's cluster, started once its nodes are back."""

    prometheus_url: pulumi.Output[str]

    def __init__(self, specs: SpecSet, specs_dir: Path, cluster: KafkaCluster, spark_image: str,
                 consumers_volume: docker.Volume | None, port: int, after: list[pulumi.Resource]) -> None:
        name = specs.cluster.name
        super().__init__("kraftform:index:Monitoring", f"{name}-monitoring", {"cluster": name}, None)
        child = pulumi.ResourceOptions(parent=self)
        network = cluster.network.name
        prometheus = pulumi.Output.from_input(network).apply(lambda net: prometheus_container(specs, net, port))
        image = docker.RemoteImage(f"{name}-prometheus-image", name=PROMETHEUS_IMAGE, keep_locally=True, opts=child)
        tsdb = docker.Volume(f"{name}-prometheus-data", name=prometheus.apply(lambda c: c.volume), opts=child)
        server = container_resource(prometheus_name(name), prometheus, image.image_id, network, tsdb, self,
                                    wait_timeout=120, after=after)
        files = spec_files(specs, specs_dir)
        # The consumers' volume, where their checkpoints are; without consumers, a volume of its own.
        mounted = consumers_volume_name(name) if consumers_volume is not None else f"{exporter_name(name)}-data"
        volume = consumers_volume or docker.Volume(f"{name}-exporter-data", name=mounted, opts=child)
        exporter: Any = pulumi.Output.all(network, cluster.admin_password, cluster.ca_certificate).apply(
            lambda v: exporter_container(specs, files, v[0], spark_image, v[1], v[2], mounted))
        spark = docker.RemoteImage(f"{name}-exporter-image", name=spark_image, keep_locally=True, opts=child)
        container_resource(exporter_name(name), pulumi.Output.unsecret(exporter), spark.image_id, network, volume, self,
                           wait_timeout=None, after=after)
        # Known once Prometheus is up (Docker reported it healthy), not before: a step reading it finds it serving.
        self.prometheus_url = server.id.apply(lambda _: f"http://127.0.0.1:{port}")
        self.register_outputs({"prometheus_url": self.prometheus_url})

