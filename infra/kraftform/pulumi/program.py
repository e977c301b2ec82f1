"""The stack: the specs, the cluster (made here, or an existing one), its topics, and the outputs.

`infra/__main__.py` reads the stack configuration into a `StackConfig` and calls `build`; tests call
`build` under `pulumi.runtime.set_mocks`, so the resource graph is checked without the Pulumi CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import pulumi

from kraftform.cluster.containers import LOCAL_IMAGE, OFFICIAL_IMAGE
from kraftform.errors import KraftformError, SpecError
from kraftform.pulumi.cluster import KafkaCluster
from kraftform.pulumi.policy import SPECS_TYPE
from kraftform.pulumi.providers import Topic
from kraftform.spec.loader import load_specs
from kraftform.spec.model import SpecSet

IMAGES = {"official": OFFICIAL_IMAGE, "local": LOCAL_IMAGE}


@dataclass(frozen=True)
class StackConfig:
    specs_dir: Path
    mode: Literal["docker", "external"] = "docker"
    env: str = "dev"
    image: str = "official"
    admin_password: pulumi.Input[str] | None = field(default=None, repr=False)
    #: external mode: an existing cluster kraftform did not create.
    bootstrap: str | None = None
    username: str | None = None
    password: pulumi.Input[str] | None = field(default=None, repr=False)
    ca_path: str | None = None

    @classmethod
    def from_pulumi(cls, default_specs: Path) -> StackConfig:
        c = pulumi.Config("kraftform")
        mode = c.get("mode") or "docker"
        if mode not in ("docker", "external"):
            raise pulumi.RunError(f"kraftform:mode must be docker or external, got {mode!r}")
        return cls(Path(c.get("specsDir") or default_specs), mode, c.get("env") or "dev",  # type: ignore[arg-type]
                   c.get("image") or "official", c.get_secret("adminPassword"), c.get("bootstrapServers"),
                   c.get("username"), c.get_secret("password"), c.get("caPath"))


def load(specs_dir: Path) -> SpecSet:
    """The specs, or a RunError with the same located messages as `kraftform validate`."""
    try:
        return load_specs(specs_dir)
    except SpecError as exc:
        raise pulumi.RunError("invalid specs:\n" + "\n".join(str(p) for p in exc.problems)) from None
    except KraftformError as exc:
        raise pulumi.RunError(str(exc)) from None


def build(cfg: StackConfig) -> dict[str, Any]:
    """Declare every resource; returns the stack outputs (also exported)."""
    specs = load(cfg.specs_dir)
    # Carries what the policy pack needs: the spec directory and the environment it is checked for.
    pulumi.ComponentResource(SPECS_TYPE, "specs", {"specsDir": str(cfg.specs_dir.resolve()), "env": cfg.env})
    security = specs.cluster.security
    depends: list[pulumi.Resource] = []
    if cfg.mode == "docker":
        cluster = KafkaCluster(specs.cluster.name, specs.cluster, IMAGES.get(cfg.image, cfg.image), cfg.admin_password)
        depends = list(cluster.containers)
        connection: pulumi.Input[dict[str, Any]] = pulumi.Output.all(
            cluster.bootstrap_servers, cluster.admin_password, cluster.ca_certificate).apply(
            lambda v: {"bootstrap": v[0], "protocol": "SASL_SSL", "mechanism": security.sasl_mechanism,
                       "username": security.admin_user, "password": v[1], "ca_pem": v[2]})
        bootstrap: pulumi.Input[str] = cluster.bootstrap_servers
        ca: pulumi.Input[str] = cluster.ca_certificate
    else:
        if not (cfg.bootstrap and cfg.username and cfg.password is not None):
            raise pulumi.RunError("external mode needs kraftform:bootstrapServers, kraftform:username and "
                                  "kraftform:password (pulumi config set --secret kraftform:password ...)")
        connection = pulumi.Output.all(cfg.password).apply(lambda v: {
            "bootstrap": cfg.bootstrap, "protocol": "SASL_SSL", "mechanism": security.sasl_mechanism,
            "username": cfg.username, "password": v[0], "ca_path": cfg.ca_path})
        bootstrap = cfg.bootstrap
        ca = Path(cfg.ca_path).read_text() if cfg.ca_path and Path(cfg.ca_path).is_file() else ""
    topics = pulumi.ComponentResource("kraftform:index:Topics", "topics", {})
    for t in specs.topics:
        Topic(t.name, t, connection, pulumi.ResourceOptions(parent=topics, depends_on=depends))
    # The streaming consumers' place: a later issue deploys them here.
    pulumi.ComponentResource("kraftform:index:Consumers", "consumers", {"declared": [c.name for c in specs.consumers]})
    def per_profile(values: list[Any]) -> dict[str, dict[str, dict[str, str]]]:
        """Each profile's producer and consumer settings with the connection (users add their own login)."""
        base = {"bootstrap.servers": values[0]["bootstrap"], "security.protocol": "SASL_SSL",
                "sasl.mechanism": security.sasl_mechanism}
        return {name: {"producer": {**base, **profile.producer}, "consumer": {**base, **profile.consumer}}
                for name, profile in sorted(specs.profiles.items())}

    client_configs = pulumi.Output.secret(cast(Any, pulumi.Output.all(connection).apply(per_profile)))
    outputs: dict[str, Any] = {"bootstrapServers": bootstrap, "caCertificate": ca, "clientConfigs": client_configs,
                               "topics": sorted(t.name for t in specs.topics)}
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
