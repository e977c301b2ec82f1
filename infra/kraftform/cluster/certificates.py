"""A private CA and one certificate per node, from `cryptography`. PEM throughout, keys in PKCS#8.

Kafka reads PEM key stores directly (`ssl.keystore.type=PEM`), so no JKS and no store passwords. Each
node's certificate names its container hostname and its loopback address, and (for the external
listener) localhost and 127.0.0.1, so clients verify hostnames everywhere. EC P-256 keys: quick to make,
which matters for throw-away test clusters.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kraftform.cluster.identity import NODE_CN_PREFIX, node_common_name
from kraftform.errors import UsageError

VALIDITY = dt.timedelta(days=825)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM. `key_pem` is a secret."""

    cert_pem: str
    key_pem: str

    @property
    def keystore_pem(self) -> str:
        """What `ssl.keystore.type=PEM` reads: the PKCS#8 key, then the certificate."""
        return self.key_pem + self.cert_pem


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kraftform"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_ca(cluster_name: str) -> KeyPair:
    key = _key()
    now = dt.datetime.now(dt.UTC)
    name = _name(f"{cluster_name} kraftform CA")
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key))


def issue(ca: KeyPair, common_name: str, names: Iterable[str] = ()) -> KeyPair:
    """A certificate for anything but a node (a service, a registry reader, a Connect worker's REST): the node
    identity's common names are refused here (identity.py)."""
    if common_name.startswith(NODE_CN_PREFIX):
        raise UsageError(f"a certificate named {common_name!r}: names starting with {NODE_CN_PREFIX!r} are the "
                         f"cluster's nodes' own; choose another")
    return _issue(ca, common_name, names)


def issue_node(ca: KeyPair, node_name: str, names: Iterable[str] = ()) -> KeyPair:
    """A node's certificate: the only kind the brokers and controllers map to the node principal."""
    return _issue(ca, node_common_name(node_name), names)


def alternative_names(names: Iterable[str]) -> list[x509.GeneralName]:
    """The names a client may reach a service by, each as the kind of name it is: a client checks an address it
    connected to against the certificate's IP entries only (RFC 6125), so an address given as a DNS name would
    never match, and a DNS name given as an address is no address at all. DNS names first, then IPv4 and IPv6
    addresses (a bracketed IPv6 address, as in a URL, is the address); each once."""
    dns: list[x509.GeneralName] = []
    ips: list[x509.GeneralName] = []
    for name in dict.fromkeys(names):
        try:
            ips.append(x509.IPAddress(ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))))
        except ValueError:
            dns.append(x509.DNSName(name))
    return [*dns, *dict.fromkeys(ips)]


def _issue(ca: KeyPair, common_name: str, names: Iterable[str]) -> KeyPair:
    """A certificate for both server and client use (nodes are both on the controller listener)."""
    ca_key = serialization.load_pem_private_key(ca.key_pem.encode(), password=None)
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.encode())
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = _key()
    now = dt.datetime.now(dt.UTC)
    sans = alternative_names(names)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(ca_cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM).decode(), _pem_key(key))


def pkcs12_keystore(pair: KeyPair, password: str, alias: str = "kraftform") -> bytes:
    """`pair` as a PKCS#12 key store: what Java's TLS servers that take no PEM (Connect's Jetty) read."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    key = serialization.load_pem_private_key(pair.key_pem.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    cert = x509.load_pem_x509_certificate(pair.cert_pem.encode())
    return pkcs12.serialize_key_and_certificates(alias.encode(), key, cert, None,
                                                 serialization.BestAvailableEncryption(password.encode()))


def pkcs12_truststore(ca_pem: str, password: str) -> bytes:
    """The CA as a PKCS#12 trust store Java reads as trusted (a plain PKCS#12 certificate entry is not)."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    ca = x509.load_pem_x509_certificate(ca_pem.encode())
    return pkcs12.serialize_java_truststore([pkcs12.PKCS12Certificate(ca, b"kraftform-ca")],
                                            serialization.BestAvailableEncryption(password.encode()))
