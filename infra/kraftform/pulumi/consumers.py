"""`SparkConsumer` and `SparkCluster`: the streaming consumers (and a Spark standalone cluster when the specs
ask for one) as pulumi-docker resources, made from the very container descriptions `kraftform consumers up`
runs (`spark.containers`), not copies.

A consumer is a container running `kraftform consumers run` in the locally built Spark image, with the
consumers' shared volume (checkpoints, Parquet output, event logs) mounted, on the cluster's network,
logging in over the brokers' in-network listener as its own SCRAM user. Its client config, which holds
that password, is an upload the engine keeps secret; its job manifest (`spark.manifest`) is the rest of what
it holds. A change to what the job uses (its query, profile, sink, or a partition count its settings follow)
changes the manifest, so `pulumi up` replaces that container alone and keeps the volume: the job continues
from its checkpoint. A state-incompatible change is refused in preview unless the stack allows that consumer
a reset, and `pulumi up` fails, naming the consumer and its job's error, if the job does not finish a
micro-batch in its new container.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import pulumi
import pulumi_docker as docker
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.containers import ContainerSpec
from kraftform.pulumi.cluster import container_resource
from kraftform.spark.checkpoint import StateShape, incompatibilities
from kraftform.spark.containers import START_PERIOD_S, consumer_container, spark_cluster_containers
from kraftform.spark.manifest import JobManifest, manifest_text, shape_digest
from kraftform.specset.model import SparkSpec

#: How long `pulumi up` waits for a consumer's job to finish its first micro-batch: its start grace, plus a minute.
WAIT_S = START_PERIOD_S + 60


class ConsumerStateProvider(ResourceProvider):
    """Guards a deployed consumer's checkpoint in `pulumi preview`: a definition whose state shape its
    checkpoint cannot serve (new source topics, a changed grouping, aggregates or watermark of a stateful
    query: `spark.checkpoint.incompatibilities`, as `kraftform diff` and `consumers run` judge it) fails
    Check, unless the stack allows this consumer a state reset (`kraftform:allowStateReset`).

    The permission reaches the consumer's job as `reset_to`, an output naming the one shape a new checkpoint
    may be started for (`spark.manifest`). It changes only when the shape does, or when a reset is allowed
    that the output does not hold yet: taking the permission back changes nothing, so it costs no second
    redeploy, and it is void for any later shape. It holds no client and touches nothing."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        if olds and olds.get("shape"):
            reasons = incompatibilities(StateShape.from_dict(olds["shape"]), StateShape.from_dict(news["shape"]))
            if reasons and not news.get("allow_reset"):
                name = news["consumer"]
                return CheckResult(news, [CheckFailure("", (
                    f"consumer {name}: state reset refused: its checkpoint cannot serve the new definition "
                    f"({'; '.join(reasons)}). To start it from a new checkpoint (the old one is kept aside; what "
                    f"the sink holds stays), run `pulumi config set kraftform:allowStateReset {name}` for this "
                    f"update; removing the setting afterwards redeploys nothing"))])
        return CheckResult(news, [])

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        shape = StateShape.from_dict(news["shape"])
        newly_allowed = bool(news.get("allow_reset")) and olds.get("reset_to") != shape_digest(shape)
        return DiffResult(changes=StateShape.from_dict(olds["shape"]) != shape or newly_allowed, replaces=[],
                          stables=["consumer"])

    @staticmethod
    def _outputs(props: dict[str, Any]) -> dict[str, Any]:
        reset = shape_digest(StateShape.from_dict(props["shape"])) if props.get("allow_reset") else ""
        return {**props, "reset_to": reset}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["consumer"], self._outputs(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._outputs(news))


def state_inputs(manifest: JobManifest, allow_reset: bool) -> dict[str, Any]:
    """The guard's inputs: the consumer's state shape as its checkpoint records it; `reset_to` is its output."""
    return {"consumer": manifest.consumer.name, "allow_reset": allow_reset, "shape": asdict(manifest.shape),
            "reset_to": None}


class ConsumerState(pulumi.dynamic.Resource):
    """A consumer's state-shape guard (`ConsumerStateProvider`)."""

    reset_to: pulumi.Output[str]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(ConsumerStateProvider(), name, props, opts)


class ConsumerReadyProvider(ResourceProvider):
    """Waits, once per container, until the consumer's own job has finished a micro-batch in it (Docker reports
    the container healthy); a job that fails (its container exits or restarts) or does not get there in time
    fails `pulumi up` with the job's own error, naming the consumer. pulumi-docker's own wait could only say
    "container failed to be in healthy state" after its whole timeout. Talks to the Docker engine the stack
    uses (DOCKER_HOST, as pulumi-docker does); holds no client."""

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get("container_id") != news.get("container_id"), replaces=[],
                          stables=["consumer"])

    @staticmethod
    def _wait(props: dict[str, Any]) -> None:
        from kraftform.runtime.consumers import wait_healthy

        wait_healthy(props["container_id"], float(props["timeout_s"]))

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._wait(props)
        return CreateResult(props["consumer"], props)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._wait(news)
        return UpdateResult(news)


class ConsumerReady(pulumi.dynamic.Resource):
    """The wait for one consumer container's job (`ConsumerReadyProvider`)."""

    def __init__(self, name: str, consumer: str, container: docker.Container, timeout_s: int,
                 opts: pulumi.ResourceOptions) -> None:
        super().__init__(ConsumerReadyProvider(), name, {"consumer": consumer, "container_id": container.id,
                                                          "timeout_s": timeout_s}, opts)


@dataclass(frozen=True)
class SparkConsumerArgs:
    """What one consumer's container is made of."""

    #: The consumer's job (`spark.manifest`), without a reset permission: its state guard adds that.
    manifest: JobManifest
    #: The specs' cluster name: the container, its volume and the standalone master are named after it.
    cluster: str
    #: The brokers' in-network listener (docker mode) or the existing cluster's address (external mode).
    bootstrap: str
    #: The consumer's own SCRAM password (a secret).
    password: pulumi.Input[str]
    ca_pem: pulumi.Input[str]
    network: pulumi.Input[str]
    image: docker.RemoteImage
    #: The consumers' shared volume (checkpoints, Parquet output, event logs).
    volume: docker.Volume
    #: What it uses and so waits for: the topics, its principal's access, the Spark cluster it is submitted to.
    after: Sequence[pulumi.Resource] = ()
    #: `kraftform:allowStateReset` names it.
    allow_reset: bool = False
    #: An Avro consumer's writer schemas by schema id (the stack's `Subjects` output): what its job decodes with.
    avro_writers: pulumi.Input[Mapping[str, str]] | None = None
    #: The standalone cluster's secret (`SparkSecret`), for a consumer submitted to it.
    spark_secret: pulumi.Input[str] | None = None


class SparkConsumer(pulumi.ComponentResource):
    """One consumer's container, its state guard and the wait for its job; outputs the container and volume.

    The container's inputs are the consumer's job manifest (its definition and effective settings), its login
    and the cluster's connection: an edit elsewhere in the specs does not touch it."""

    container_name: pulumi.Output[str]
    volume_name: pulumi.Output[str]

    def __init__(self, name: str, args: SparkConsumerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        manifest, consumer = args.manifest, args.manifest.consumer
        super().__init__("kraftform:index:SparkConsumer", name, {"consumer": consumer.name}, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.state = ConsumerState(f"{name}-state", state_inputs(manifest, args.allow_reset), child)

        def describe(v: list[Any]) -> ContainerSpec:
            settings = replace(manifest.settings, avro_writers=dict(v[5] or {}))
            job = manifest_text(replace(manifest, settings=settings, reset_to=v[4] or ""))
            return consumer_container(consumer, args.cluster, job, args.bootstrap, manifest.mechanism, v[0], v[1],
                                      v[2], v[3], spark_secret=v[6] or "")

        # Rendered with the password, so the whole spec would be secret; only its uploads are (made secret in
        # container_resource). Name, command, volume and health check stay readable in a preview.
        spec = pulumi.Output.unsecret(pulumi.Output.all(args.password, args.ca_pem, args.network, args.image.name,
                                                        self.state.reset_to, args.avro_writers,
                                                        args.spark_secret).apply(describe))
        # After its state guard, its topics and its principal's access (`after`): it logs in and reads as soon
        # as it starts. Not waited for by pulumi-docker: ConsumerReady waits and says why a job failed.
        self.container = container_resource(f"{name}-consumer", spec, args.image.image_id, args.network, args.volume,
                                            self, wait_timeout=None, after=[self.state, *args.after])
        self.ready = ConsumerReady(f"{name}-ready", consumer.name, self.container, WAIT_S, child)
        self.container_name = self.container.name
        self.volume_name = args.volume.name
        self.register_outputs({"container": self.container.name, "volume": args.volume.name})


class SparkSecretProvider(ResourceProvider):
    """Makes the standalone cluster's shared secret (`spark.containers.standalone_conf`) once and keeps it for the
    stack's life: the master, the workers and each consumer's driver hold the same one."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(props["cluster"], {**props, "secret": secrets.token_hex(32)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=olds.get("cluster") != news.get("cluster"), replaces=["cluster"])


class SparkSecret(pulumi.dynamic.Resource):
    """The standalone cluster's shared secret (`SparkSecretProvider`), a secret output."""

    secret: pulumi.Output[str]

    def __init__(self, name: str, cluster: str, opts: pulumi.ResourceOptions) -> None:
        hidden = pulumi.ResourceOptions(additional_secret_outputs=["secret"])
        super().__init__(SparkSecretProvider(), name, {"cluster": cluster, "secret": None},
                         pulumi.ResourceOptions.merge(opts, hidden))


class SparkCluster(pulumi.ComponentResource):
    """The Spark standalone master and workers (`cluster.spark.master: standalone`), from the same
    descriptions `kraftform consumers up` runs; consumers are submitted to it in client mode."""

    def __init__(self, name: str, cluster: str, spark: SparkSpec, network: pulumi.Input[str],
                 ca_pem: pulumi.Input[str], secret: pulumi.Input[str], image: docker.RemoteImage,
                 volume: docker.Volume, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:SparkCluster", name, {"workers": spark.workers}, opts)
        # Rendered with the secret; only its uploads are secret (container_resource), as a consumer's.
        specs = pulumi.Output.unsecret(pulumi.Output.all(network, image.name, ca_pem, secret).apply(
            lambda v: spark_cluster_containers(cluster, spark, v[1], v[0], v[2], v[3])))

        def one(index: int) -> pulumi.Output[ContainerSpec]:
            return specs.apply(lambda all_specs: all_specs[index])

        # The master first: workers register with it as they start.
        master = container_resource(f"{name}-master", one(0), image.image_id, network, volume, self, wait_timeout=120)
        self.containers = [master, *(
            container_resource(f"{name}-worker-{i}", one(i + 1), image.image_id, network, volume, self,
                               wait_timeout=120, after=[master]) for i in range(spark.workers))]
        self.register_outputs({})
