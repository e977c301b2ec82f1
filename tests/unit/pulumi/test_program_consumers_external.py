"""The prod (external) stack with `kraftform:deployConsumers`: the consumers in containers on the stack's
Docker engine, on a network of their own, reaching the existing cluster at its own address."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .mocks import IMAGE_ID, SECRET_SIG, SECRET_VALUE, Mocks, RecordingMonitor, built_stack, pulumi_test
from .test_program_external import BOOTSTRAP, CA, prod_config

MONITOR: RecordingMonitor | None = None
#: `kraftform:sparkImage`: an image honouring the consumers' contract, built and pushed elsewhere.
IMAGE = "registry.example.com/platform/kraftform-spark:4.2.0-1"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    with built_stack("prod-consumers", lambda: prod_config(tmp_path_factory.mktemp("prod"), deploy_consumers=True,
                                                           spark_image=IMAGE)
                     ) as (mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_consumers_reach_an_existing_cluster_from_containers_of_their_own(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(deployed: dict[str, Any]) -> None:
        assert MONITOR is not None
        assert set(deployed) == {"fraud-scoring", "clickstream-sessionizer"}
        [image] = mocks.of_type("docker:index/remoteImage:RemoteImage")
        assert image.inputs["name"] == IMAGE
        [network] = mocks.of_type("docker:index/network:Network")
        assert network.inputs["name"] == "kraftform-platform-consumers"
        containers = mocks.of_type("docker:index/container:Container")
        assert sorted(c.name for c in containers) == ["clickstream-sessionizer-consumer", "fraud-scoring-consumer"]
        container = next(c for c in containers if c.name == "fraud-scoring-consumer")
        assert container.inputs["image"] == IMAGE_ID
        assert container.inputs["networksAdvanced"][0]["name"] == "kraftform-platform-consumers"
        wrapped = container.inputs["uploads"]
        assert wrapped[SECRET_SIG] == SECRET_VALUE
        uploads = {u["file"]: u["content"] for u in wrapped["value"]}
        assert f"bootstrap.servers={BOOTSTRAP}\n" in uploads["/etc/kraftform/client.properties"]
        assert uploads["/etc/kraftform/ca.pem"] == CA
        # Hardened as the runtimes' containers are: no privilege gained, no capability, a bounded log.
        for made in containers:
            assert made.inputs["securityOpts"] == ["no-new-privileges:true"]
            assert made.inputs["capabilities"] == {"drops": ["ALL"]}
            assert (made.inputs["logDriver"], made.inputs["logOpts"]) == ("json-file", {"max-size": "20m",
                                                                                      "max-file": "5"})
        # prod: the checkpoints' volume is protected like the topics and principals.
        assert MONITOR.protected["consumers-data"]

    return outputs["consumers"].apply(check)
