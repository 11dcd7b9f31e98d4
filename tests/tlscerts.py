"""Certificates made in the test with ``openssl``: a private CA and server certificates it signs.

certs = make_certs(tmp_path)
certs.ca                          # the CA certificate (PEM), for --ca-cert
certs.server["127.0.0.1"]         # (cert, key) valid for IP 127.0.0.1
certs.server["wrong.example"]     # (cert, key) from the same CA, for another name
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Certs", "make_certs"]

_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass
class Certs:
    ca: Path
    server: dict[str, tuple[Path, Path]] = field(default_factory=dict)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certs(directory: Path, names: tuple[str, ...] = ("127.0.0.1", "wrong.example")) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", *_EC, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=llm-locust test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=directory,
    )  # fmt: skip
    certs = Certs(directory / "ca.pem")
    for name in names:
        stem = name.replace(".", "_")
        san = f"IP:{name}" if name.replace(".", "").isdigit() else f"DNS:{name}"
        (directory / f"{stem}.ext").write_text(
            f"subjectAltName={san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            "keyUsage=critical,digitalSignature\nauthorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n"
        )
        key, csr = f"{stem}.key", f"{stem}.csr"
        _openssl("req", *_EC, "-keyout", key, "-out", csr, "-subj", f"/CN={name}", cwd=directory)
        _openssl(
            "x509", "-req", "-in", f"{stem}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{stem}.pem", "-days", "2", "-extfile", f"{stem}.ext",
            cwd=directory,
        )  # fmt: skip
        certs.server[name] = (directory / f"{stem}.pem", directory / f"{stem}.key")
    return certs
