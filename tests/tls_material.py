"""Certificates for the security tests, made at test time (no key material is committed), by
engine.net.tls_material (which ``kraftd cluster up --security`` uses too): ``TestCA`` issues
leaf certificates for 127.0.0.1/localhost and ``write_pem`` lays one out as Kafka's PEM stores
read it; PKCS12 stores, the JDK's keytool and a listener that tells the principal it saw are here.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from engine.net.tls_material import HOSTS, Leaf, LocalCA, PemFiles, write_pem


class TestCA(LocalCA):
    """A self-signed root for one test's certificates (30 days); two do not trust each other."""

    __test__ = False  # not a pytest test class

    def __init__(self, name: str = "metashell test CA"):
        super().__init__(name, "metashell tests")


def write_truststore(path: Path, *cas: TestCA) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(ca.cert_pem() for ca in cas))
    return path


def write_pkcs12(path: Path, leaf: Leaf | None, password: str | None, *, cas: tuple[TestCA, ...] = ()) -> Path:
    """A PKCS12 store made by ``cryptography``: ``leaf``'s key and certificate (a keystore) and/or
    ``cas`` as certificate entries (a truststore), encrypted under ``password``."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"leaf" if leaf else None, leaf.key if leaf else None, leaf.cert if leaf else None,
        [ca.cert for ca in cas] or None, encryption))
    return path


def keytool(*args: str) -> None:
    """The JDK's keytool (the one next to ``java``), for stores made as a JVM makes them."""
    import os
    import shutil
    import subprocess

    java_home = os.environ.get("JAVA_HOME")
    tool = (str(Path(java_home) / "bin" / "keytool") if java_home and (Path(java_home) / "bin" / "keytool").exists()
            else shutil.which("keytool"))
    assert tool, "keytool (the JDK's) is not on PATH: the PKCS12/JKS tests need it, as the Kafka tests need java"
    subprocess.run([tool, *args], check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


def principals_seen(security, client_securities: list) -> list:
    """Serve ``security`` (a ListenerSecurity) on 127.0.0.1 and connect each ClientSecurity in turn:
    the principal the listener saw (a DescribeCluster answer carrying it as its cluster id), or
    the NetError the client got. Returns once every connection is closed, so refusals are logged."""
    import asyncio

    from engine.net.errors import NetError
    from engine.net.kafka_client import KafkaClient
    from engine.net.kafka_protocol import RAFT_APIS, request_class, response_class
    from engine.net.kafka_server import KafkaServer
    from engine.records.kio_codec import ErrorCode

    async def who_am_i(ctx, request):
        return response_class(60, 0)(throttle_time=datetime.timedelta(0), error_code=ErrorCode.none, error_message=None,
                                     cluster_id=str(ctx.principal), controller_id=1, brokers=(),
                                     cluster_authorized_operations=0)

    async def main() -> list:
        out: list = []
        async with KafkaServer(who_am_i, listener_name="SECURE", security=security, apis={**RAFT_APIS}) as server:
            for client_security in client_securities:
                async with KafkaClient(client_id="t", request_timeout_ms=5000, security=client_security) as client:
                    try:
                        answer = await client.send(("127.0.0.1", server.address[1]),
                                                   request_class(60, 0)(include_cluster_authorized_operations=False))
                        out.append(answer.cluster_id)
                    except NetError as err:
                        out.append(err)
            while server.connection_count:
                await asyncio.sleep(0.01)
        return out
    return asyncio.run(asyncio.wait_for(main(), 30))


__all__ = ["HOSTS", "Leaf", "PemFiles", "TestCA", "keytool", "principals_seen", "write_pem", "write_pkcs12",
           "write_truststore"]
