"""A schema registry for the package's tests: Apicurio Registry as `scripts/setup` builds it from Maven Central,
started by `kraftform registry up` beside a one-node local cluster of the package's own (replication is not the
subject), both made once for the package from specs a test edits as a user does."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kraftform.declared import load_specs
from kraftform.registry.rest import RegistryRest
from kraftform.runtime import get_runtime
from kraftform.runtime.nodes.local import listening
from kraftform.runtime.registry.running import LocalRegistry

ORDER: dict[str, Any] = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}
TOPIC = "orders.shop"
SUBJECT = f"{TOPIC}-value"


@dataclass
class Registry:
    specs: Path
    state: Path

    def write(self, schema: Mapping[str, Any], **value: object) -> None:
        """The topic's value schema, as a user edits the .avsc file and the topic's `schemas` entry."""
        (self.specs / "schemas" / "order.avsc").write_text(json.dumps(schema, indent=2))
        doc = yaml.safe_load((self.specs / "topics.yaml").read_text())
        doc["topics"][0]["schemas"] = {"value": {"file": "schemas/order.avsc", **value}}
        (self.specs / "topics.yaml").write_text(yaml.safe_dump(doc))

    def client(self) -> RegistryRest:
        """kraftform's own client of the registry (its certificate from the cluster's CA)."""
        spec = load_specs(self.specs).registry
        assert spec is not None
        return LocalRegistry(self.state, spec).client()

    def kraftform(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`kraftform COMMAND SPECS --state-dir STATE ARGS...`, as a user runs it."""
        command, *rest = args
        words = command.split()
        return subprocess.run([sys.executable, "-m", "kraftform", *words, str(self.specs), "--state-dir",
                               str(self.state), *rest], capture_output=True, text=True, timeout=300, check=False)


def _free_port() -> int:
    while True:
        port = random.randint(20000, 29000)
        if not listening("127.0.0.1", port) and not listening("127.0.0.1", port + 1):
            return port


@pytest.fixture(scope="package")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    base = tmp_path_factory.mktemp("registry")
    specs, state = base / "specs", base / "state"
    (specs / "schemas").mkdir(parents=True)
    (specs / "cluster.yaml").write_text(yaml.safe_dump({
        "cluster": {"name": "kfreg", "mode": "combined", "controllers": 1, "brokers": 1,
                    "defaults": {"replication_factor": 1, "min_insync_replicas": 1},
                    "security": {"sasl_mechanism": "SCRAM-SHA-512"}},
        "registry": {"port": _free_port()}}))
    (specs / "topics.yaml").write_text(yaml.safe_dump({"topics": [{"name": TOPIC, "partitions": 3}]}))
    r = Registry(specs, state)
    r.write(ORDER)
    runtime = get_runtime("local", state)
    try:
        # As a user starts both: the specs' `registry` section starts it beside the cluster.
        up = subprocess.run([sys.executable, "-m", "kraftform", "cluster", "up", str(specs), "--runtime", "local",
                             "--state-dir", str(state), "--timeout", "300"], capture_output=True, text=True,
                            timeout=600, check=False)
        assert up.returncode == 0, up.stdout + up.stderr
        assert "schema registry: https://" in up.stdout and r.client().subjects() == [], up.stdout
        yield r
    finally:
        for log in state.glob("registry/registry.log"):
            (base / "registry.log").write_bytes(log.read_bytes())
        r.kraftform("registry down", "--purge")
        runtime.down(purge=True)
