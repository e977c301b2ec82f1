"""Who is a node: the one principal mapping that makes a certificate a super user, and the move onto it. Pure.

Every certificate kraftform issues is signed by the cluster's CA: the nodes', and also the registry's, its readers',
each Connect worker's REST key. Kafka maps a certificate to a principal by its subject alone, so the node principal
must hang on something only a node's certificate carries: its common name starts with `NODE_CN_PREFIX`, which
`certificates.issue` refuses to any other holder (`certificates.issue_node` is the one way to get it). Any other
certificate of the CA maps to `User:CN=...,O=kraftform`, which no ACL names: on the INTERNAL and CONTROLLER
listeners it can do nothing.

Clusters made before this rule mapped every certificate of the CA to the node principal (`LEGACY_MAPPING`). They
move over in two rolls, without a lock-out: the first gives each node its new certificate and trusts both rules (a
node not restarted yet still trusts the new certificate through the old rule, which matches any common name); once
every node runs with both, the second keeps the node rule alone. Which one nodes are rendered with follows from
what the running nodes were started with (`principal_mapping`), so an interrupted move resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cryptography import x509
from cryptography.x509.oid import NameOID

from kraftform.specset.model import NODE_PRINCIPAL

#: The start of every node certificate's common name, and of no other certificate's.
NODE_CN_PREFIX = "kraftform-node:"
MAPPING_KEY = "ssl.principal.mapping.rules"
_NODE_RULE = f"RULE:^CN={NODE_CN_PREFIX}[^,]+,O=kraftform$/{NODE_PRINCIPAL}/"
_LEGACY_RULE = f"RULE:^CN=[^,]+,O=kraftform$/{NODE_PRINCIPAL}/"
#: Only a node's certificate is the node principal; any other maps to its own distinguished name.
PRINCIPAL_MAPPING = f"{_NODE_RULE},DEFAULT"
#: What clusters made before it were started with: any certificate of the cluster's CA was a node.
LEGACY_MAPPING = f"{_LEGACY_RULE},DEFAULT"
#: The first roll of the move: nodes trust both, while some still present (or trust only) the old certificates.
MOVING_MAPPING = f"{_NODE_RULE},{_LEGACY_RULE},DEFAULT"


def node_common_name(node_name: str) -> str:
    return f"{NODE_CN_PREFIX}{node_name}"


def is_node_certificate(cert_pem: str) -> bool:
    """Whether a certificate carries the node identity (one issued before the rule does not)."""
    names = x509.load_pem_x509_certificate(cert_pem.encode()).subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return any(str(n.value).startswith(NODE_CN_PREFIX) for n in names)


def principal_mapping(running: Iterable[Mapping[str, str] | None]) -> str:
    """The rules to render nodes with, given the settings the running nodes were started with: while any runs with
    the old rule alone, both (the first roll of the move); otherwise the node rule alone (a new cluster, a moved
    one, or the second roll of the move)."""
    started = {props.get(MAPPING_KEY) for props in running if props is not None}
    return MOVING_MAPPING if LEGACY_MAPPING in started else PRINCIPAL_MAPPING
