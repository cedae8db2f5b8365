"""The control plane's TLS material: a private CA and a serving certificate it signs.

TLS is not optional for kubectl: client-go sends a kubeconfig's credentials (the bearer token)
only over https, so a plain-http server could never authenticate kubectl. Both are made on
first start under ``<home>/pki`` (private key files 0600) and reused after; the kubeconfig
carries the CA so clients verify the server without ``insecure-skip-tls-verify``.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kubehpc.store.home import Home

SERVER_NAMES = ("localhost",)
SERVER_IPS = ("127.0.0.1", "::1")
VALID_DAYS = 3650


@dataclass(frozen=True)
class TLSFiles:
    ca_cert: Path
    cert: Path
    key: Path

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert.read_bytes()


def tls_files(home: Home) -> TLSFiles:
    pki = home.root / "pki"
    return TLSFiles(pki / "ca.crt", pki / "server.crt", pki / "server.key")


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, path)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def ensure_tls(home: Home, extra_hosts: tuple[str, ...] = ()) -> TLSFiles:
    """The CA and serving certificate under ``home``, created when missing."""
    files = tls_files(home)
    if files.ca_cert.exists() and files.cert.exists() and files.key.exists():
        return files
    files.cert.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=VALID_DAYS)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("kubehpc-ca"))
        .issuer_name(_name("kubehpc-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    hosts = [*SERVER_NAMES, *SERVER_IPS, *extra_hosts]
    sans: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kubehpc-apiserver"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(files.key, key_pem, 0o600)
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(files.ca_cert, ca.public_bytes(serialization.Encoding.PEM), 0o644)
    return files
