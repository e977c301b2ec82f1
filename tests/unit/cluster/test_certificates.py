from __future__ import annotations

import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from kraftform.cluster.certificates import alternative_names, issue, issue_node, make_ca


def test_node_certificate_is_signed_by_the_ca_and_names_its_hosts() -> None:
    ca = make_ca("c")
    pair = issue_node(ca, "c-broker-0", ["c-broker-0", "localhost", "127.0.0.1", "127.40.0.4"])
    cert = x509.load_pem_x509_certificate(pair.cert_pem.encode())
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.encode())
    cert.verify_directly_issued_by(ca_cert)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["c-broker-0", "localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"),
                                                       ipaddress.ip_address("127.40.0.4")]
    assert cert.subject.rfc4514_string() == "CN=kraftform-node:c-broker-0,O=kraftform"
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_keys_are_unencrypted_pkcs8_and_keystore_is_key_then_cert() -> None:
    ca = make_ca("c")
    pair = issue(ca, "n")
    assert pair.key_pem.startswith("-----BEGIN PRIVATE KEY-----")  # PKCS#8, what Kafka's PEM store reads
    assert pair.keystore_pem.index("PRIVATE KEY") < pair.keystore_pem.index("CERTIFICATE")
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    assert isinstance(load_pem_private_key(pair.key_pem.encode(), None), ec.EllipticCurvePrivateKey)


def test_names_and_addresses_are_told_apart_whatever_list_they_come_in() -> None:
    """A host's address may be a DNS name (a Connect worker's on `docker-b.internal`) or an IPv6 address: each
    becomes the kind of entry a client matches it against, where before a DNS name given as an address failed
    `connect up` with a traceback."""
    assert alternative_names(["worker-0", "localhost", "127.0.0.1", "docker-b.internal", "fd00::5", "[::1]",
                              "::1", "worker-0"]) == [
        x509.DNSName("worker-0"), x509.DNSName("localhost"), x509.DNSName("docker-b.internal"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.IPAddress(ipaddress.ip_address("fd00::5")),
        x509.IPAddress(ipaddress.ip_address("::1"))]
    pair = issue(make_ca("c"), "c Connect worker 0", ["c-connect-0", "localhost", "127.0.0.1", "docker-b.internal"])
    sans = x509.load_pem_x509_certificate(pair.cert_pem.encode()).extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["c-connect-0", "localhost", "docker-b.internal"]
