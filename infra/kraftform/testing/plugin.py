"""The pytest plugin (entry point `pytest11`: installing kraftform registers it).

    # pytest.ini (or [tool.pytest.ini_options])
    [pytest]
    kraftform_specs = specs          # default: specs/ in pytest's rootdir
    kraftform_topology = fast        # faithful (default) or fast
    kraftform_runtime = local        # local (default: JVMs on this machine) or docker

    def test_orders(kafka_cluster):
        producer = Producer(kafka_cluster.client("orders-service"))
        ...

    def test_archive(kafka_connect):      # the specs' `connect:` section, connectors running as declared
        assert kafka_connect.connector("orders-archive").state == "running"

    def test_schema(schema_registry):     # the specs' `registry:` beside the cluster, every subject registered
        client = SchemaRegistryClient(schema_registry.client_conf("orders-service"))

The options of the same names (`--kraftform-specs DIR`, ...) win over the ini settings. The cluster starts on
first use, once per session; invalid specs fail the first test that asks for it with `kraftform validate`'s
located errors, before any process starts. Sessions run side by side get clusters of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kraftform.testing.variant import TOPOLOGIES

if TYPE_CHECKING:
    from kraftform.testing.cluster import EphemeralCluster

OPTIONS = (
    ("specs", "the specs directory the test cluster is made from (default: specs/ in pytest's rootdir)", None),
    ("topology", f"the test cluster's shape: {' or '.join(TOPOLOGIES)} (default faithful)", "faithful"),
    ("runtime", "where its nodes run: local (JVMs on this machine) or docker (default local)", "local"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kraftform", "kraftform test clusters")
    for name, text, default in OPTIONS:
        group.addoption(f"--kraftform-{name}", dest=f"kraftform_{name}", default=None, help=text)
        parser.addini(f"kraftform_{name}", text, default=default)


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"kraftform_{name}")
    return value if value is not None else config.getini(f"kraftform_{name}")


@pytest.fixture(scope="session")
def kafka_cluster(request: pytest.FixtureRequest) -> Iterator[EphemeralCluster]:
    """A secure cluster from the specs with the specs applied, for the whole session; removed at its end."""
    from kraftform.errors import KraftformError, SpecError
    from kraftform.testing.cluster import ephemeral_cluster

    config = request.config
    specs = Path(_setting(config, "specs") or Path(config.rootpath) / "specs")
    if not specs.is_absolute():
        specs = Path(config.rootpath) / specs
    try:
        with ephemeral_cluster(specs, _setting(config, "topology"), _setting(config, "runtime")) as cluster:
            yield cluster
            return
    except SpecError as exc:
        problem = "invalid specs, no cluster started:\n" + "\n".join(str(p) for p in exc.problems)
    except KraftformError as exc:
        problem = f"no test cluster: {exc}"
    pytest.fail(problem, pytrace=False)  # outside the handler: the user's error alone, no chained traceback


@pytest.fixture(scope="session")
def kafka_connect(kafka_cluster: EphemeralCluster) -> Iterator[Any]:
    """The specs' Connect clusters against the test cluster, each connector running (or paused or stopped) as
    declared, for the whole session (`testing.connect.KafkaConnect`); a connector its plugin refuses, or whose
    task fails, fails the first test that asks, in Connect's words."""
    from kraftform.errors import KraftformError
    from kraftform.testing.connect import running_connect

    try:
        with running_connect(kafka_cluster) as connect:
            yield connect
            return
    except KraftformError as exc:
        problem = f"no Kafka Connect: {exc}"
    pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def schema_registry(kafka_cluster: EphemeralCluster) -> Iterator[Any]:
    """The specs' schema registry beside the test cluster with every declared subject registered, for the whole
    session (`testing.registry.SchemaRegistry`); a schema the registry refuses fails the first test that asks."""
    from kraftform.errors import KraftformError
    from kraftform.testing.registry import running_registry

    try:
        with running_registry(kafka_cluster) as registry:
            yield registry
            return
    except KraftformError as exc:
        problem = f"no schema registry: {exc}"
    pytest.fail(problem, pytrace=False)


@pytest.fixture(scope="session")
def kraftform_spark(kafka_cluster: EphemeralCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Spark session for every consumer a test run runs (kraftform's `spark` extra)."""
    from kraftform.testing.consumers import session

    spark = session(kafka_cluster, tmp_path_factory.mktemp("kraftform-spark"))
    try:
        yield spark
    finally:
        spark.stop()


@pytest.fixture
def kafka_consumer(kafka_cluster: EphemeralCluster, kraftform_spark: Any, tmp_path: Path,
                   request: pytest.FixtureRequest) -> Any:
    """`kafka_consumer(name, records)`: produce `records` ((topic, key, value), or bare values for the
    consumer's first topic; dicts are sent as JSON, or for an Avro consumer in Avro through the `schema_registry`
    fixture, started when first needed), run the declared consumer `name` until it has read them, and return what
    its sink received (`testing.consumers.run_consumer`)."""
    from kraftform.testing.consumers import run_consumer

    def run(name: str, records: Any = ()) -> list[dict[str, Any]]:
        return run_consumer(kafka_cluster, kraftform_spark, name, records, tmp_path,
                            lambda: request.getfixturevalue("schema_registry").admin)

    return run

