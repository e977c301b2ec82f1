"""What the Pulumi engine does with a Python dynamic provider, done here without the engine (its CLI cannot be
installed on these machines): start the provider host the way the engine's launcher starts it, then drive it
over gRPC in the engine's order and with the engine's arguments.

The launcher (`pulumi-resource-pulumi-python`, shipped with the CLI, not with the SDK) runs in the program's
directory, Pulumi.yaml's `main`, and gets the project's runtime options as PULUMI_RUNTIME_<OPTION> variables.
A relative `virtualenv` is taken from *that* directory (pulumi/pulumi#7061), which is not where the language
host looks for it (the project directory). `launch_command` resolves it the same way and fails with the
launcher's message, so a layout a real `pulumi up` would reject is rejected here too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import yaml
from pulumi.dynamic import ResourceProvider
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import proto, rpc
from pulumi.runtime.proto import provider_pb2_grpc

URN = "urn:pulumi:dev::kraftform::pulumi-python:dynamic:Resource::{}"


class LaunchError(Exception):
    """The launcher would exit 1 with this message: the engine reports it as 'could not read plugin'."""


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    cwd: Path
    env: dict[str, str]


def launch_command(project: Path) -> Launch:
    """How the engine's launcher starts the dynamic provider host for the project at `project`."""
    meta = yaml.safe_load((project / "Pulumi.yaml").read_text())
    runtime = meta["runtime"]
    options = runtime.get("options") or {} if isinstance(runtime, dict) else {}
    cwd = project / meta.get("main", ".")
    env = dict(os.environ)
    env.update({f"PULUMI_RUNTIME_{k.upper()}": str(v) for k, v in options.items()})
    virtualenv = options.get("virtualenv") or (".venv" if options.get("toolchain") == "uv" else None)
    if not virtualenv:
        return Launch([env.get("PULUMI_PYTHON_CMD", "python3"), "-u", "-m", "pulumi.dynamic"], cwd, env)
    venv = Path(str(virtualenv).rstrip("/"))
    venv = venv if venv.is_absolute() else cwd / venv  # $PWD/<option>: the program's directory
    python = venv / "bin" / "python"
    if not python.is_file():
        what = "doesn't appear to be a virtual environment" if venv.is_dir() else "doesn't exist"
        raise LaunchError(f"The 'virtualenv' option in Pulumi.yaml is set to \"{venv}\", but \"{venv}\" {what}.")
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    env.pop("PYTHONHOME", None)
    return Launch([str(python), "-u", "-m", "pulumi.dynamic"], cwd, env)


def wire(props: dict[str, Any]) -> Any:
    """Properties as the engine sends them (a protobuf Struct; secrets already plain: the dynamic provider
    host does not accept secrets)."""
    # A loop of its own, as the provider host does: asyncio.run() would leave this thread without a current
    # loop, and the Pulumi SDK (the mock tests that follow) asks for one.
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(rpc.serialize_properties(props, {}))
    finally:
        loop.close()


def unwire(struct: Any) -> dict[str, Any]:
    return {k: v for k, v in rpc.deserialize_properties(struct).items() if k != "__provider"}


class ProviderHost:
    """One provider host process, started as the engine's launcher starts it; it keeps the providers' process
    state (caches) between calls, as during one `pulumi up`."""

    def __init__(self, project: Path, tmpdir: Path) -> None:
        launch = launch_command(project)
        #: The host's temporary directory, so tests can see what providers leave behind.
        self.tmpdir = tmpdir
        #: What the providers write to stderr (the engine logs it), read by the tests; a file, so it never fills.
        self.stderr = tmpdir.parent / f"{tmpdir.name}.stderr"
        with self.stderr.open("wb") as err:
            self.process = subprocess.Popen(launch.argv, cwd=launch.cwd, stdout=subprocess.PIPE, stderr=err,
                                            env={**launch.env, "PULUMI_PROJECT": "kraftform", "TMPDIR": str(tmpdir)})
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            self.process.kill()
            self.process.wait(timeout=10)
            raise LaunchError(f"the provider host did not start: {line!r} {self.stderr.read_text()[-2000:]}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{int(line)}")
        self.stub = provider_pb2_grpc.ResourceProviderStub(self.channel)
        self.stub.Configure(proto.ConfigureRequest(args=wire({})))

    def check(self, provider: ResourceProvider, name: str, olds: dict[str, Any], news: dict[str, Any]
              ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        code = serialize_provider(provider)
        old = wire({**olds, "__provider": code}) if olds else wire({})
        response = self.stub.Check(proto.CheckRequest(urn=URN.format(name), olds=old,
                                                      news=wire({**news, "__provider": code})))
        return unwire(response.inputs), [(f.property, f.reason) for f in response.failures]

    def create(self, provider: ResourceProvider, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        code = serialize_provider(provider)
        response = self.stub.Create(proto.CreateRequest(urn=URN.format(name),
                                                        properties=wire({**inputs, "__provider": code})))
        return response.id, unwire(response.properties)

    def read(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any],
             inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """`pulumi refresh`: the provider reports what is there; the engine keeps it as the new outputs."""
        code = serialize_provider(provider)
        response = self.stub.Read(proto.ReadRequest(id=id_, urn=URN.format(name),
                                                    properties=wire({**outputs, "__provider": code}),
                                                    inputs=wire({**inputs, "__provider": code})))
        return response.id, unwire(response.properties)

    def diff(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any],
             inputs: dict[str, Any]) -> Any:
        code = serialize_provider(provider)
        return self.stub.Diff(proto.DiffRequest(id=id_, urn=URN.format(name),
                                                olds=wire({**outputs, "__provider": code}),
                                                news=wire({**inputs, "__provider": code})))

    def update(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any],
               inputs: dict[str, Any]) -> dict[str, Any]:
        code = serialize_provider(provider)
        response = self.stub.Update(proto.UpdateRequest(id=id_, urn=URN.format(name),
                                                        olds=wire({**outputs, "__provider": code}),
                                                        news=wire({**inputs, "__provider": code})))
        return unwire(response.properties)

    def delete(self, provider: ResourceProvider, name: str, id_: str, outputs: dict[str, Any]) -> None:
        code = serialize_provider(provider)
        self.stub.Delete(proto.DeleteRequest(id=id_, urn=URN.format(name),
                                             properties=wire({**outputs, "__provider": code})))

    def close(self) -> None:
        self.channel.close()
        self.process.kill()
        self.process.wait()
