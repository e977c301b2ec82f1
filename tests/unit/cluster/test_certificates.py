from __future__ import annotations

import ipaddress

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from kraftform.cluster.certificates import issue, issue_node, make_ca


def test_node_certificate_is_signed_by_the_ca_and_names_its_hosts() -> None:
    ca = make_ca("c")
    pair = issue_node(ca, "c-broker-0", ["c-broker-0", "localhost"], ["127.0.0.1", "127.40.0.4"])
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
