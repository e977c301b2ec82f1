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

import pulumi
import pulumi_docker as docker

from kraftform.cluster.containers import ContainerSpec
from kraftform.pulumi.cluster import container_resource
from kraftform.spark.containers import START_PERIOD_S, consumer_container, spark_cluster_containers
from kraftform.spec.model import ConsumerSpec, SparkSpec

#: How long `pulumi up` waits for a consumer to be healthy: its start grace, plus a minute.
WAIT_S = START_PERIOD_S + 60


class SparkConsumer(pulumi.ComponentResource):
    """One consumer's volume and container; outputs their names."""

    container_name: pulumi.Output[str]
    volume_name: pulumi.Output[str]

    def __init__(self, name: str, consumer: ConsumerSpec, cluster: str, spec_files: Mapping[str, str],
                 bootstrap: str, mechanism: str, password: pulumi.Input[str], ca_pem: pulumi.Input[str],
                 network: pulumi.Input[str], image: docker.RemoteImage, volume: docker.Volume,
                 after: Sequence[pulumi.Resource] = (), opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:SparkConsumer", name, {"consumer": consumer.name}, opts)
        # Rendered with the password, so the whole spec would be secret; only its uploads are (made secret in
        # container_resource). Name, command, volume and health check stay readable in a preview.
        spec = pulumi.Output.unsecret(pulumi.Output.all(password, ca_pem, network, image.name).apply(
            lambda v: consumer_container(consumer, cluster, dict(spec_files), bootstrap, mechanism, v[0], v[1], v[2],
                                         v[3])))
        # After its topics and its principal's access (`after`): it logs in and reads as soon as it starts.
        self.container = container_resource(f"{name}-consumer", spec, image.image_id, network, volume, self,
                                            wait_timeout=WAIT_S, after=after)
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
