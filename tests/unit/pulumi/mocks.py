"""Pulumi's mock engine, recording what the program registers, for graph tests without the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import pulumi
from pulumi.runtime.mocks import MockMonitor

from kraftform.cluster.containers import docker_addressing
from kraftform.cluster.render import make_secrets, secrets_to_dict
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.plan.export import password_env
from kraftform.pulumi.program import StackConfig, build

from ...conftest import EXAMPLE_SPECS

# How the Pulumi SDK marks a secret value on the wire.
SECRET_SIG, SECRET_VALUE = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
# What the mock Docker engine answers as the ID of every image.
IMAGE_ID = "sha256:" + "ab" * 32

F = TypeVar("F", bound=Callable[..., Any])


def pulumi_test(fn: F) -> F:
    """pulumi.runtime.test, typed: runs the test and waits for the outputs it returns."""
    return cast(F, pulumi.runtime.test(fn))  # type: ignore[no-untyped-call]


@functools.cache
def cluster_secrets() -> dict[str, Any]:
    """The example cluster's certificates and passwords, made once: a stack keeps its secrets in its state, so
    two builds of the program compared in a test see the same ones, as two `pulumi up` runs do."""
    topo = topology(load_specs(EXAMPLE_SPECS).cluster)
    return secrets_to_dict(make_secrets(topo, docker_addressing(topo)))


#: What the `SparkSecret` resource's provider would make (a random one), in the mocks.
SPARK_SECRET = "mock-spark-secret"


class Mocks(pulumi.runtime.Mocks):
    """Records every resource; the secrets resource answers as its provider would (real certificates), and a
    consumer's state guard with the output its provider makes."""

    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources.append(args)
        outputs = dict(args.inputs)
        if args.name.endswith("-secrets"):
            outputs.update(cluster_secrets())
        if args.name.endswith("-state"):
            outputs["reset_to"] = ""
        if args.name == "spark-secret":
            outputs["secret"] = SPARK_SECRET
        if args.typ == "docker:index/remoteImage:RemoteImage":
            outputs["imageId"] = IMAGE_ID
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None

    def of_type(self, typ: str) -> list[pulumi.runtime.MockResourceArgs]:
        return [r for r in self.resources if r.typ == typ]


class RecordingMonitor(MockMonitor):
    """The mock engine, also keeping each resource's dependencies (URNs) and `protect`, which mocks do not see."""

    def __init__(self, mocks: Mocks) -> None:
        super().__init__(mocks)
        self.dependencies: dict[str, list[str]] = {}
        self.protected: dict[str, bool] = {}

    def RegisterResource(self, request: Any) -> Any:
        self.dependencies[request.name] = list(request.dependencies)
        self.protected[request.name] = bool(request.protect)
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


def start(stack: str, mocks: Mocks | None = None) -> tuple[Mocks, RecordingMonitor]:
    """Mocks for a new stack (`mocks`, where a test answers for more resources), on a fresh event loop: the SDK
    runs on the thread's current loop, which an earlier test may have closed or unset."""
    asyncio.set_event_loop(asyncio.new_event_loop())
    mocks = mocks or Mocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="kraftform", stack=stack, preview=False, monitor=monitor)
    return mocks, monitor


@contextlib.contextmanager
def built_stack(stack: str, config: Callable[[], StackConfig], mocks: Mocks | None = None
                ) -> Iterator[tuple[Mocks, RecordingMonitor, dict[str, Any]]]:
    """The program built under mocks, with the example users' passwords in the environment. `config` is
    called once the mocks run (its Outputs belong to their event loop). The outputs resolve only once every
    Kafka resource is registered with the (mock) engine."""
    saved = dict(os.environ)
    os.environ.update({password_env(u.name): f"secret-of-{u.name}" for u in load_specs(EXAMPLE_SPECS).users})
    mocks, monitor = start(stack, mocks)
    try:
        built = build(config())
        urns = pulumi.Output.all(*[r.urn for r in built.kafka_resources])
        yield mocks, monitor, {k: pulumi.Output.all(v, urns).apply(lambda pair: pair[0])
                               for k, v in built.outputs.items()}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def registered(stack: str, config: Callable[[], StackConfig]) -> Mocks:
    """The program built under mocks and run until every resource is registered with its inputs resolved: what
    the engine would be handed, for tests that compare two builds."""
    with built_stack(stack, config) as (mocks, _monitor, outputs):
        pulumi_test(lambda: pulumi.Output.all(*outputs.values()))()
    return mocks
