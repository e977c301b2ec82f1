"""The harness the multi-host tests run on: three hosts, each a network namespace with its own Docker engine and an
address only the bridge between them carries, reached by its socket, by TCP with a client certificate and by
ssh. A container one host publishes on its address is reached from
the other hosts' containers and from the machine; a host whose link is cut is not, and is again once it is back;
`down` leaves nothing behind."""

from __future__ import annotations

import pytest

from kraftform.errors import EnvironmentMissing
from kraftform.runtime.engines.engine import host_client

from . import harness

pytestmark = [pytest.mark.integration, pytest.mark.hosts]

PORT = 18999
#: A one-connection-at-a-time TCP server answering its host's name (perl: what the base image has).
SERVER = ("use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => %d, Listen => 5, ReuseAddr => 1) "
          "or die $!; while (my $c = $s->accept) { print $c \"%s\\n\"; close $c }")
CLIENT = ("use IO::Socket::INET; my $c = IO::Socket::INET->new(PeerAddr => '%s:%d', Timeout => 3) "
          "or die \"no answer: $!\\n\"; print <$c>")


def _ask(host: harness.Host, address: str) -> str:
    """What a container on `host` hears from `address`, or the reason it heard nothing."""
    done = host.docker("run", "--rm", "kraftform/debian:trixie", "perl", "-e", CLIENT % (address, PORT), check=False)
    return (done.stdout or done.stderr).strip()


def test_three_hosts_each_with_its_engine_reach_each_other_across_the_bridge_alone(
        three_hosts: list[harness.Host]) -> None:
    a, b, c = three_hosts
    for host in three_hosts:
        # Its own engine, its own data root, in its own namespace with its address.
        info = host.docker("info", "--format", "{{.DockerRootDir}}").stdout.strip()
        assert info == str(host.data_root / "docker") or info == str(host.data_root)
        addresses = harness._run(["ip", "-n", host.netns, "-4", "-o", "addr", "show", "eth0"]).stdout
        assert f"{host.address}/24" in addresses
        assert "kraftform/debian:trixie" in host.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout
    assert [h.address for h in three_hosts] == ["10.231.0.1", "10.231.0.2", "10.231.0.3"]
    # Each engine over TCP on its address: with the harness's client certificate it answers, without it refuses.
    ca, cert, key = (str(p) for p in harness.CLIENT_TLS)
    assert host_client("a", a.tcp_endpoint, [ca, cert, key]).ping()
    with pytest.raises(EnvironmentMissing) as refused:
        host_client("a", a.tcp_endpoint)
    assert str(refused.value).startswith("host 'a': no Docker engine answers at tcp://10.231.0.1:2376")
    # Each engine through its host's sshd too (the machine's own ssh client, the harness's key): that host's engine.
    over_ssh = host_client("c", c.ssh_endpoint).info()
    assert over_ssh["DockerRootDir"] in (str(c.data_root / "docker"), str(c.data_root))
    # One engine's containers are its own: the others do not see them.
    a.docker("run", "-d", "--name", "answer", "-p", f"{a.address}:{PORT}:{PORT}", "kraftform/debian:trixie", "perl",
             "-e", SERVER % (PORT, "host a"))
    assert b.docker("ps", "-aq", "--filter", "name=answer").stdout.strip() == ""
    assert _ask(b, a.address) == "host a" and _ask(c, a.address) == "host a"
    machine = harness._run(["perl", "-e", CLIENT % (a.address, PORT)], check=False)
    assert machine.stdout.strip() == "host a", machine.stderr
    # A cut link is a host the others lose (the multi-host tests' network partition), and find again.
    harness.cut(a)
    try:
        assert _ask(b, a.address).startswith("no answer")
    finally:
        harness.cut(a, connected=True)
    assert _ask(c, a.address) == "host a"


def test_down_leaves_nothing_and_up_again_starts_clean(three_hosts: list[harness.Host]) -> None:
    harness.down()
    assert harness.leftovers() == []
    again = harness.up([h.name for h in three_hosts], ())
    assert [h.address for h in again] == [h.address for h in three_hosts]
    assert all(h.docker("ps", "-aq").stdout.strip() == "" for h in again)  # nothing of the earlier run
