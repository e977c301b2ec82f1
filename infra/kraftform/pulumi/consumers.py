"""`SparkConsumer` and `SparkCluster`: the streaming consumers (and a Spark standalone cluster when the specs
ask for one) as pulumi-docker resources, made from the very container descriptions `kraftform consumers up`
runs (`spark.containers`), not copies.

A consumer is a container running `kraftform consumers run` in the locally built Spark image, with the
consumers' shared volume (checkpoints, Parquet output, event logs) mounted, on the cluster's network,
logging in over the brokers' in-network listener as its own SCRAM user. Its client config, which holds
that password, is an upload the engine keeps secret. A changed query, profile or spec file changes the
container's uploads, so `pulumi up` replaces the container and keeps the volume: the job continues from its
checkpoint, and the checkpoint guard of `consumers run` refuses a state-incompatible change (the new
container then fails its health check, and `pulumi up` with it) unless the consumer is run once with
`--allow-destructive`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

import pulumi
import pulumi_docker as docker
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.containers import ContainerSpec
from kraftform.pulumi.cluster import container_resource
from kraftform.spark.checkpoint import StateShape, incompatibilities, state_shape
from kraftform.spark.containers import START_PERIOD_S, consumer_container, spark_cluster_containers
from kraftform.spark.settings import job_settings
from kraftform.spec.model import ConsumerSpec, SparkSpec, SpecSet

#: How long `pulumi up` waits for a consumer to be healthy: its start grace, plus a minute.
WAIT_S = START_PERIOD_S + 60


class ConsumerStateProvider(ResourceProvider):
    """Guards a deployed consumer's checkpoint in `pulumi preview`: a definition whose state shape its
    checkpoint cannot serve (new source topics, a changed grouping, aggregates or watermark of a stateful
    query: `spark.checkpoint.incompatibilities`, as `kraftform diff` and `consumers run` judge it) fails
    Check, unless the stack allows a state reset (`kraftform:allowStateReset`), in which case the consumer's
    container runs with `--allow-destructive` and starts from a new checkpoint, the old one kept aside. It
    holds no client and touches nothing: the shape is all it keeps."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        if olds and olds.get("shape"):
            reasons = incompatibilities(StateShape.from_dict(olds["shape"]), StateShape.from_dict(news["shape"]))
            if reasons and not news.get("allow_reset"):
                return CheckResult(news, [CheckFailure("shape", (
                    f"consumer {news['consumer']}: state reset: its checkpoint cannot serve the new definition "
                    f"({'; '.join(reasons)}). To start it from a new checkpoint (the old one is kept aside; what "
                    f"the sink holds stays), run once with `pulumi config set kraftform:allowStateReset true`, "
                    f"then set it back to false"))])
        return CheckResult(news, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = (StateShape.from_dict(olds["shape"]) != StateShape.from_dict(news["shape"])
                   or bool(olds.get("allow_reset")) != bool(news.get("allow_reset")))
        return DiffResult(changes=changed, replaces=[], stables=["consumer"])

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["consumer"], props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(news)


def state_inputs(consumer: ConsumerSpec, specs: SpecSet, allow_reset: bool) -> dict[str, Any]:
    """The guard's inputs: the consumer's state shape as its checkpoint records it."""
    return {"consumer": consumer.name, "allow_reset": allow_reset,
            "shape": asdict(state_shape(consumer, job_settings(consumer, specs).facts))}


class ConsumerState(pulumi.dynamic.Resource):
    """A consumer's state-shape guard (`ConsumerStateProvider`)."""

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(ConsumerStateProvider(), name, props, opts)


class SparkConsumer(pulumi.ComponentResource):
    """One consumer's container (and its state guard), on the consumers' shared volume; outputs both names."""

    container_name: pulumi.Output[str]
    volume_name: pulumi.Output[str]

    def __init__(self, name: str, consumer: ConsumerSpec, specs: SpecSet, spec_files: Mapping[str, str],
                 bootstrap: str, password: pulumi.Input[str], ca_pem: pulumi.Input[str],
                 network: pulumi.Input[str], image: docker.RemoteImage, volume: docker.Volume,
                 after: Sequence[pulumi.Resource] = (), allow_reset: bool = False,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:SparkConsumer", name, {"consumer": consumer.name}, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.state = ConsumerState(f"{name}-state", state_inputs(consumer, specs, allow_reset), child)
        mechanism = next(u.mechanism for u in specs.users if u.name == consumer.user)
        cluster = specs.cluster.name
        # Rendered with the password, so the whole spec would be secret; only its uploads are (made secret in
        # container_resource). Name, command, volume and health check stay readable in a preview.
        spec = pulumi.Output.unsecret(pulumi.Output.all(password, ca_pem, network, image.name).apply(
            lambda v: consumer_container(consumer, cluster, dict(spec_files), bootstrap, mechanism, v[0], v[1], v[2],
                                         v[3], allow_reset)))
        # After its state guard, its topics and its principal's access (`after`): it logs in and reads as soon
        # as it starts.
        self.container = container_resource(f"{name}-consumer", spec, image.image_id, network, volume, self,
                                            wait_timeout=WAIT_S, after=[self.state, *after])
        self.container_name = self.container.name
        self.volume_name = volume.name
        self.register_outputs({"container": self.container.name, "volume": volume.name})


class SparkCluster(pulumi.ComponentResource):
    """The Spark standalone master and workers (`cluster.spark.master: standalone`), from the same
    descriptions `kraftform consumers up` runs; consumers are submitted to it in client mode."""

    def __init__(self, name: str, cluster: str, spark: SparkSpec, network: pulumi.Input[str],
                 ca_pem: pulumi.Input[str], image: docker.RemoteImage, volume: docker.Volume,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:SparkCluster", name, {"workers": spark.workers}, opts)
        specs = pulumi.Output.all(network, image.name, ca_pem).apply(
            lambda v: spark_cluster_containers(cluster, spark, v[1], v[0], v[2]))

        def one(index: int) -> pulumi.Output[ContainerSpec]:
            return specs.apply(lambda all_specs: all_specs[index])

        # The master first: workers register with it as they start.
        master = container_resource(f"{name}-master", one(0), image.image_id, network, volume, self, wait_timeout=120)
        self.containers = [master, *(
            container_resource(f"{name}-worker-{i}", one(i + 1), image.image_id, network, volume, self,
                               wait_timeout=120, after=[master]) for i in range(spark.workers))]
        self.register_outputs({})
