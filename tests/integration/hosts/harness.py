"""Real hosts on one machine: each host a network namespace of its own with its own Docker engine (own data root,
exec root and socket), the namespaces joined by a bridge, each with an address that exists only on that bridge,
and the local images loaded into each engine. What a test of several hosts runs on; `python -m
tests.integration.hosts.harness up|down` makes and removes the same by hand.

Why each step is as it is:
- the engines are started with `nsenter --net` (their network namespace alone): `ip netns exec` also remounts
  /sys for the namespace, which hides the cgroup mounts and dockerd refuses to start ("Devices cgroup isn't
  mounted");
- the bridge is in the machine's own namespace, so the machine's Docker engine has already set its FORWARD
  policy to DROP and br_netfilter hands bridged frames to it: without the one ACCEPT rule for the bridge, a
  container on one host never reaches another host (the machine itself, whose packets are not forwarded, does);
- the machine keeps an address on the bridge (the last one of the range): kraftform's CLI, run on the machine,
  reaches the hosts' published ports as an operator's workstation would;
- each host also runs its own `sshd` (Debian's) on its address, whose sessions get `DOCKER_HOST` set to the host's
  engine (`SetEnv`): `ssh://root@ADDRESS` reaches that engine as on a real machine (`docker system dial-stdio`
  there). The machine's ssh client finds the harness's key and known hosts through one file in
  /etc/ssh/ssh_config.d that names the hosts' range only; it is removed with the rest;
- teardown removes every container through its engine first (a container ignoring SIGTERM holds its engine's
  shutdown for its stop timeout), then stops the engine, kills what is left in the namespace, unmounts what the
  engine mounted under its roots, and removes the roots, the namespaces, the links and the rule: nothing is left.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from kraftform.cluster.certificates import issue, make_ca

#: Everything the harness makes is named with this prefix (interfaces: 15 characters at most).
PREFIX = "kfh"
BRIDGE = f"{PREFIX}0"
#: The hosts' range: each host .1, .2, ...; the machine .254 on the bridge.
NETWORK = ipaddress.ip_network("10.231.0.0/24")
ROOT = Path("/var/lib/kraftform-hosts")
RUN = Path("/run/kraftform-hosts")
ENGINE_START_S = 60.0
FORWARD_RULE = ["FORWARD", "-i", BRIDGE, "-o", BRIDGE, "-j", "ACCEPT"]
#: Each engine also listens on its host's address here, TLS with client certificates from the harness's own CA.
TCP_PORT = 2376
TLS = RUN / "tls"
#: The machine's client certificate for the engines' TCP endpoints: CA, certificate, key.
CLIENT_TLS = (TLS / "ca.pem", TLS / "client.pem", TLS / "client-key.pem")
#: The hosts' sshd: one host key, the machine's client key, authorized keys and known hosts.
SSH = RUN / "ssh"
#: How the machine's ssh client finds them for the hosts' range (and no other address).
SSH_CLIENT_CONFIG = Path("/etc/ssh/ssh_config.d/kraftform-hosts.conf")
SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class Host:
    """One host: its name, its network namespace, its address on the bridge and its Docker engine's socket."""

    name: str
    index: int

    @property
    def netns(self) -> str:
        return f"{PREFIX}-{self.name}"

    @property
    def veth(self) -> str:
        return f"{PREFIX}{self.index}v"

    @property
    def address(self) -> str:
        return str(NETWORK.network_address + self.index)

    @property
    def data_root(self) -> Path:
        return ROOT / self.name

    @property
    def exec_root(self) -> Path:
        return RUN / self.name

    @property
    def socket(self) -> Path:
        return self.exec_root / "docker.sock"

    @property
    def docker_host(self) -> str:
        """The engine's endpoint, as `DOCKER_HOST` or a Docker provider's `host` takes it."""
        return f"unix://{self.socket}"

    @property
    def tcp_endpoint(self) -> str:
        """The same engine over TCP on the host's address, which asks for a client certificate (`--tlsverify`)."""
        return f"tcp://{self.address}:{TCP_PORT}"

    @property
    def ssh_endpoint(self) -> str:
        """The same engine through the host's sshd, as a real machine's `ssh://` endpoint."""
        return f"ssh://root@{self.address}"

    @property
    def server_tls(self) -> tuple[Path, Path]:
        return TLS / f"{self.name}.pem", TLS / f"{self.name}-key.pem"

    @property
    def pidfile(self) -> Path:
        return self.exec_root / "docker.pid"

    @property
    def sshd_pidfile(self) -> Path:
        return self.exec_root / "sshd.pid"

    def docker(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """The docker CLI against this host's engine."""
        return _run(["docker", "-H", self.docker_host, *args], check=check, timeout=timeout)


def machine_address() -> str:
    return str(NETWORK.broadcast_address - 1)


def _run(argv: list[str], check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return done


def hosts(names: Iterable[str]) -> list[Host]:
    return [Host(name, i) for i, name in enumerate(names, start=1)]


def _range_free() -> None:
    """The hosts' range must be nobody else's on this machine: traffic to it stays on the bridge."""
    routes = _run(["ip", "-4", "route", "show"]).stdout
    for line in routes.splitlines():
        target = line.split()[0]
        if target == "default" or BRIDGE in line:
            continue
        with contextlib.suppress(ValueError):
            if ipaddress.ip_network(target, strict=False).overlaps(NETWORK):
                raise RuntimeError(f"{NETWORK} is routed on this machine already ({line}): the harness would send "
                                   f"traffic to someone else's addresses")


def up(names: Iterable[str], images: Iterable[str] = ()) -> list[Host]:
    """The hosts made (after removing any left by a killed run), each engine answering, `images` loaded."""
    made = hosts(names)
    down()
    _range_free()
    _run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    _run(["ip", "addr", "add", f"{machine_address()}/{NETWORK.prefixlen}", "dev", BRIDGE])
    _run(["ip", "link", "set", BRIDGE, "up"])
    _run(["iptables", "-I", *FORWARD_RULE])
    _make_tls(made)
    _make_ssh(made)
    for host in made:
        _run(["ip", "netns", "add", host.netns])
        _run(["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns])
        _run(["ip", "link", "set", host.veth, "master", BRIDGE, "up"])
        _run(["ip", "-n", host.netns, "addr", "add", f"{host.address}/{NETWORK.prefixlen}", "dev", "eth0"])
        _run(["ip", "-n", host.netns, "link", "set", "eth0", "up"])
        _run(["ip", "-n", host.netns, "link", "set", "lo", "up"])
        _start_engine(host)
    for host in made:
        _wait_engine(host)
        _start_sshd(host)
    with ThreadPoolExecutor(len(made) or 1) as pool:  # one load per engine at once: 19 s for Kafka's, not 40
        for done in [pool.submit(load_image, host, image) for host in made for image in images]:
            done.result()
    return made


def kill(host: Host) -> None:
    """The host lost: every process in its namespace (its engine, containerd, the containers' processes)
    SIGKILLed at once, as a machine that loses power. `start_engine` is the machine back."""
    for pid in _pids_in(host.netns):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start_engine(host: Host) -> None:
    """The host back (after `kill`): its engine started again, waited for, and its sshd."""
    _start_engine(host)
    _wait_engine(host)
    _start_sshd(host)


def cut(host: Host, connected: bool = False) -> None:
    """The host's link to the others cut (a network partition), or restored with `connected`."""
    _run(["ip", "link", "set", host.veth, "up" if connected else "down"])


def _make_tls(made: list[Host]) -> None:
    """A CA for the engines' TCP endpoints, a server certificate per host naming its address, a client one."""
    TLS.mkdir(parents=True, exist_ok=True)
    ca = make_ca("kraftform-hosts")
    client = issue(ca, "kraftform-machine")
    files = {CLIENT_TLS[0]: ca.cert_pem, CLIENT_TLS[1]: client.cert_pem, CLIENT_TLS[2]: client.key_pem}
    for host in made:
        server = issue(ca, host.name, [host.address])
        files |= {host.server_tls[0]: server.cert_pem, host.server_tls[1]: server.key_pem}
    for path, content in files.items():
        path.write_text(content)
        path.chmod(0o600)


def _make_ssh(made: list[Host]) -> None:
    """The hosts' host key, the machine's client key (authorized on every host), the known hosts, and the client
    configuration for the hosts' range."""
    SSH.mkdir(parents=True, exist_ok=True)
    SSH.chmod(0o700)
    keys = {}
    for name in ("host_key", "client_key"):
        key = ed25519.Ed25519PrivateKey.generate()
        (SSH / name).write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                                   serialization.NoEncryption()))
        (SSH / name).chmod(0o600)
        keys[name] = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                   serialization.PublicFormat.OpenSSH).decode()
    (SSH / "authorized_keys").write_text(keys["client_key"] + "\n")
    (SSH / "known_hosts").write_text("".join(f"{h.address} {keys['host_key']}\n" for h in made))
    SSH_CLIENT_CONFIG.write_text(
        f"# kraftform's hosts harness (tests/integration/hosts/harness.py); removed by its `down`.\n"
        f"Host {NETWORK.network_address.exploded.rsplit('.', 1)[0]}.*\n"
        f"  IdentityFile {SSH / 'client_key'}\n  IdentitiesOnly yes\n  UserKnownHostsFile {SSH / 'known_hosts'}\n"
        f"  StrictHostKeyChecking yes\n  BatchMode yes\n")
    for host in made:
        (host.exec_root).mkdir(parents=True, exist_ok=True)
        (host.exec_root / "sshd_config").write_text("".join(f"{line}\n" for line in (
            f"ListenAddress {host.address}:22", f"HostKey {SSH / 'host_key'}",
            f"AuthorizedKeysFile {SSH / 'authorized_keys'}", f"PidFile {host.sshd_pidfile}",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "UsePAM no", "StrictModes no", f"SetEnv DOCKER_HOST={host.docker_host}")))


def _start_sshd(host: Host) -> None:
    """The host's sshd in its namespace (it detaches; `kill` and `down` end it with the namespace's processes)."""
    Path("/run/sshd").mkdir(exist_ok=True)  # its privilege separation directory
    _run(["nsenter", f"--net=/run/netns/{host.netns}", SSHD, "-f", str(host.exec_root / "sshd_config")])


def _start_engine(host: Host) -> None:
    host.data_root.mkdir(parents=True, exist_ok=True)
    host.exec_root.mkdir(parents=True, exist_ok=True)
    log = (host.exec_root / "dockerd.log").open("ab")
    subprocess.Popen(["nsenter", f"--net=/run/netns/{host.netns}", "dockerd", "--data-root", str(host.data_root),
                      "--exec-root", str(host.exec_root / "exec"), "--pidfile", str(host.pidfile), "-H",
                      host.docker_host, "-H", host.tcp_endpoint, "--tlsverify", "--tlscacert", str(CLIENT_TLS[0]),
                      "--tlscert", str(host.server_tls[0]), "--tlskey", str(host.server_tls[1]),
                      "--cgroup-parent", host.netns],
                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()


def _wait_engine(host: Host) -> None:
    deadline = time.monotonic() + ENGINE_START_S
    while time.monotonic() < deadline:
        if host.socket.exists() and host.docker("version", "--format", "{{.Server.Version}}",
                                                check=False).returncode == 0:
            return
        time.sleep(0.5)
    log = (host.exec_root / "dockerd.log").read_text(errors="replace")[-2000:]
    raise RuntimeError(f"host {host.name}'s Docker engine did not answer in {ENGINE_START_S:.0f} s:\n{log}")


def load_image(host: Host, image: str) -> None:
    """`docker save` on the machine's engine into `docker load` on the host's."""
    with subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE) as save:
        loaded = subprocess.run(["docker", "-H", host.docker_host, "load"], stdin=save.stdout, capture_output=True,
                                text=True, timeout=600, check=False)
    if save.returncode != 0 or loaded.returncode != 0:
        raise RuntimeError(f"loading {image} into host {host.name}: {loaded.stderr.strip()}")


def _netns_names() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(f"{PREFIX}-")]


def _pids_in(netns: str) -> list[int]:
    out = _run(["ip", "netns", "pids", netns], check=False).stdout
    return [int(p) for p in out.split()]


def _mounts_under(roots: Iterable[Path]) -> list[str]:
    prefixes = tuple(f"{r}/" for r in roots)
    with open("/proc/mounts") as mounts:
        points = [line.split()[1] for line in mounts]
    return sorted((p for p in points if p.startswith(prefixes) or p in {str(r) for r in roots}), reverse=True)


def down() -> None:
    """Every host the harness made (by its names, whatever the caller knows of): containers, engines, processes
    left in the namespaces, mounts, roots, namespaces, links, the forwarding rule."""
    for netns in _netns_names():
        name = netns.removeprefix(f"{PREFIX}-")
        host = Host(name, 0)
        if host.socket.exists():
            ids = host.docker("ps", "-aq", check=False, timeout=60).stdout.split()
            if ids:
                host.docker("rm", "-f", *ids, check=False, timeout=120)
        for pidfile in (host.pidfile, host.sshd_pidfile):
            if pidfile.exists():
                with contextlib.suppress(ValueError, ProcessLookupError):
                    os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _pids_in(netns) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in _pids_in(netns):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    time.sleep(0.5 if _netns_names() else 0)
    for point in _mounts_under([ROOT, RUN]):
        _run(["umount", "-l", point], check=False)
    for netns in _netns_names():
        _run(["ip", "netns", "del", netns], check=False)
    shutil.rmtree(ROOT, ignore_errors=True)
    shutil.rmtree(RUN, ignore_errors=True)
    SSH_CLIENT_CONFIG.unlink(missing_ok=True)
    links = _run(["ip", "-o", "link", "show"]).stdout
    for line in links.splitlines():
        link = line.split(":")[1].strip().split("@")[0]
        if link.startswith(PREFIX):
            _run(["ip", "link", "del", link], check=False)
    while _run(["iptables", "-C", *FORWARD_RULE], check=False).returncode == 0:
        _run(["iptables", "-D", *FORWARD_RULE])


def leftovers() -> list[str]:
    """What the harness made that is still there (empty after `down`)."""
    found = [f"netns {n}" for n in _netns_names()]
    links = _run(["ip", "-o", "link", "show"]).stdout
    found += [f"link {line.split(':')[1].strip()}" for line in links.splitlines()
              if line.split(":")[1].strip().startswith(PREFIX)]
    found += [f"mount {m}" for m in _mounts_under([ROOT, RUN])]
    found += [f"directory {d}" for d in (ROOT, RUN) if d.exists()]
    found += [f"file {SSH_CLIENT_CONFIG}"] if SSH_CLIENT_CONFIG.exists() else []
    if _run(["iptables", "-C", *FORWARD_RULE], check=False).returncode == 0:
        found.append("iptables rule " + " ".join(FORWARD_RULE))
    engines = _run(["pgrep", "-af", "--", f"--data-root {ROOT}"], check=False).stdout.strip()
    found += [f"process {line}" for line in engines.splitlines() if line]
    return found


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "up":
        for made in up(sys.argv[2:] or ["a", "b", "c"], ["kraftform/debian:trixie"]):
            print(f"host {made.name}: {made.address}, DOCKER_HOST={made.docker_host}")
    elif command == "down":
        down()
        print("\n".join(leftovers()) or "nothing left")
    else:
        sys.exit("usage: python -m tests.integration.hosts.harness up [NAME...] | down")
