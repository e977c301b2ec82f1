"""Which nodes a cluster spec asks for: ids, roles, racks, names. Pure.

Node ids are stable under scaling: brokers are 1..N and dedicated controllers 1001..1000+C, so adding a
broker never renumbers a controller. In combined mode (small dev clusters) every node is a broker and the
first C also vote in the controller quorum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kraftform.specset.hosts import CONTROLLER_ID_BASE as CONTROLLER_ID_BASE  # re-exported: the cluster layer names it
from kraftform.specset.hosts import laid_out_nodes
from kraftform.specset.model import DEFAULT_CONTROLLER_HEAP, ClusterSpec

#: Listener ports inside a node; identical on every node (each has its own address).
CLIENT_PORT = 9092
INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094

Role = Literal["broker", "controller"]


@dataclass(frozen=True)
class Node:
    node_id: int
    name: str
    roles: tuple[Role, ...]
    rack: str | None = None
    #: Index among brokers (for the external listener's port); None for controller-only nodes.
    broker_index: int | None = None
    #: JVM heap; brokers need more as partitions grow (about 384 MiB per few thousand replicas).
    heap_bytes: int = DEFAULT_CONTROLLER_HEAP
    #: Start fast rather than run fast (`ClusterSpec.quick_start`).
    quick_start: bool = False

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles


@dataclass(frozen=True)
class Topology:
    cluster: ClusterSpec
    nodes: tuple[Node, ...]

    @property
    def brokers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_broker)

    @property
    def controllers(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.is_controller)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


def topology(cluster: ClusterSpec) -> Topology:
    """The nodes `specset.hosts.laid_out_nodes` numbers (one numbering for hosts, ports and records), with their
    roles and heaps."""
    nodes = []
    for n in laid_out_nodes(cluster):
        roles: tuple[Role, ...] = (*(("broker",) if n.broker else ()), *(("controller",) if n.voter else ()))
        heap = cluster.broker_heap_bytes if n.broker else cluster.controller_heap_bytes
        nodes.append(Node(n.node_id, n.name, roles, n.rack, n.node_id - 1 if n.broker else None, heap,
                          cluster.quick_start))
    return Topology(cluster, tuple(nodes))
