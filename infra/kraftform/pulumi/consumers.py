"""`SparkConsumer`: one streaming consumer as pulumi-docker resources, made from the very container description
`kraftform consumers up` runs (`spark.containers.consumer_container`), not a copy.

A consumer is a volume (its checkpoint, Parquet output and event logs) and a container running `kraftform
consumers run` in the locally built Spark image, on the cluster's network, logging in over the brokers'
in-network listener as its own SCRAM user. Its client config, which holds that password, is an upload the
engine keeps secret. A changed query, profile or spec file changes the container's uploads, so `pulumi up`
replaces the container and keeps the volume: the job continues from its checkpoint, and the checkpoint guard
of `consumers run` refuses a state-incompatible change (the new container then fails its health check, and
`pulumi up` with it) unless the consumer is run once with `--allow-destructive`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_docker as docker

from kraftform.pulumi.cluster import container_resource
from kraftform.spark.containers import START_PERIOD_S, consumer_container, consumer_volume
from kraftform.spec.model import ConsumerSpec

#: How long `pulumi up` waits for a consumer to be healthy: its start grace, plus a minute.
WAIT_S = START_PERIOD_S + 60


class SparkConsumer(pulumi.ComponentResource):
    """One consumer's volume and container; outputs their names."""

    container_name: pulumi.Output[str]
    volume_name: pulumi.Output[str]

    def __init__(self, name: str, consumer: ConsumerSpec, cluster: str, spec_files: Mapping[str, str],
                 bootstrap: str, mechanism: str, password: pulumi.Input[str], ca_pem: pulumi.Input[str],
                 network: pulumi.Input[str], image: docker.RemoteImage, after: Sequence[pulumi.Resource] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:SparkConsumer", name, {"consumer": consumer.name}, opts)
        # Rendered with the password, so the whole spec would be secret; only its uploads are (made secret in
        # container_resource). Name, command, volume and health check stay readable in a preview.
        spec = pulumi.Output.unsecret(pulumi.Output.all(password, ca_pem, network, image.name).apply(
            lambda v: consumer_container(consumer, cluster, dict(spec_files), bootstrap, mechanism, v[0], v[1], v[2],
                                         v[3])))
        self.volume = docker.Volume(f"{name}-consumer-data", name=consumer_volume(cluster, consumer.name),
                                    opts=pulumi.ResourceOptions(parent=self))
        # After its topics and its principal's access (`after`): it logs in and reads as soon as it starts.
        self.container = container_resource(f"{name}-consumer", spec, image.image_id, network, self.volume, self,
                                            wait_timeout=WAIT_S, after=after)
        self.container_name = self.container.name
        self.volume_name = self.volume.name
        self.register_outputs({"container": self.container.name, "volume": self.volume.name})
