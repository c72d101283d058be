"""``kraftd cluster up --security PROTOCOL``: a local cluster whose every listener is secured.

What a secured production cluster has, made for the cluster's directory D at ``up``:

    D/tls/ca.pem                    the cluster's own CA (ssl.truststore.location, PEM)
    D/tls/node.keystore.pem         the nodes' key and certificate, owner-only (SSL, SASL_SSL)
    D/tls/admin.keystore.pem        the operator's, for mutual TLS (SSL)
    D/client.properties             a --command-config for metashell, kraftd quorum and Kafka's tools

- SSL: mutual TLS (``ssl.client.auth=required``); a node is ``User:CN=kraftd``, the operator
  ``User:CN=admin``, both super users.
- SASL_PLAINTEXT and SASL_SSL: the nodes log in to one another as ``kraftd`` with PLAIN (its
  user in the listeners' JAAS), the operator as ``admin`` with SCRAM-SHA-512, each with a random
  password. SCRAM is checked against a node's metadata image, which holds the credentials only once
  a leader has committed them, so controllers cannot vote for one another with it (in Kafka
  neither). The operator's credential is bootstrapped at format time, as ``kafka-storage format
  --add-scram`` does.

Every controller runs StandardAuthorizer with those two ``super.users``; the brokers' listener is
named after its protocol and is the inter-broker listener, which the controllers also name
(``inter.broker.listener.name``) so unclean recovery reaches the brokers there. All of it with
Kafka's config names, so Kafka's own brokers (``--kafka-brokers``) read the same lines.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.common.errors import ConfigError
from engine.common.file_io import write_private
from engine.common.java_properties import load_properties
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity, SecurityProtocol
from engine.cluster.processes import ClusterError

# engine.cluster.layout's Layout and Node: that module imports this one, so no import back
Layout = Any
Node = Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISM = "SCRAM-SHA-512"  # the operator's
NODE_MECHANISM = "PLAIN"  # the nodes' among themselves
NODE_USER = "kraftd"
ADMIN_USER = "admin"
TLS_DIR = "tls"
CLIENT_CONFIG = "client.properties"
CREDENTIALS_FILE = "credentials.properties"  # D/tls/: the SCRAM passwords, owner-only
CA_VALID_DAYS = 365  # a local cluster may live a while; Kafka does not check its CA's age
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def protocol_of(layout: Layout) -> SecurityProtocol:
    return SecurityProtocol[layout.settings.security_protocol]


def broker_listener(layout: Layout) -> str:
    """The brokers' listener name: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, as its protocol."""
    return protocol_of(layout).name


def client_config_path(layout: Layout) -> Path:
    return layout.root / CLIENT_CONFIG


def _jaas(user: str, password: str) -> str:
    return f'{SCRAM_MODULE} required username="{user}" password="{password}";'


@dataclass(frozen=True)
class Credentials:
    """The passwords of the cluster's two users (SASL protocols only): the nodes' PLAIN login and
    the operator's SCRAM credential."""

    node_password: str
    admin_password: str

    def scram_arguments(self) -> list[str]:
        """``--add-scram`` values for ``kraftd storage format`` (and ``kafka-storage format``)."""
        return [f"{MECHANISM}=[name={ADMIN_USER},password={self.admin_password}]"]


def write_material(layout: Layout) -> None:
    """The CA, certificates, passwords and client.properties of a new cluster (nothing for
    PLAINTEXT). Private files are owner-only."""
    from engine.net.tls_material import LocalCA

    protocol = protocol_of(layout)
    if protocol is SecurityProtocol.PLAINTEXT:
        return
    tls = layout.root / TLS_DIR
    tls.mkdir(parents=True, exist_ok=True)
    client = [f"security.protocol={protocol.name}"]
    if protocol.uses_tls:
        ca = LocalCA(f"kraftd cluster {layout.cluster_id}", "kraftd", valid_days=CA_VALID_DAYS)
        (tls / "ca.pem").write_bytes(ca.cert_pem())
        # PEM keystores (the key, then the certificate); every side trusts the one ca.pem
        stores = {"node": NODE_USER} if protocol.uses_sasl else {"node": NODE_USER, ADMIN_USER: ADMIN_USER}
        for store, user in stores.items():
            leaf = ca.issue(user)
            write_private(tls / f"{store}.keystore.pem", leaf.key_pem() + leaf.cert_pem())
        client += ["ssl.truststore.type=PEM", f"ssl.truststore.location={tls / 'ca.pem'}"]
        if not protocol.uses_sasl:
            client += ["ssl.keystore.type=PEM", f"ssl.keystore.location={tls / f'{ADMIN_USER}.keystore.pem'}"]
    if protocol.uses_sasl:
        credentials = Credentials(secrets.token_urlsafe(18), secrets.token_urlsafe(18))
        write_private(tls / CREDENTIALS_FILE, (f"{NODE_USER}={credentials.node_password}\n"
                                               f"{ADMIN_USER}={credentials.admin_password}\n").encode())
        client += [f"sasl.mechanism={MECHANISM}", f"sasl.jaas.config={_jaas(ADMIN_USER, credentials.admin_password)}"]
    write_private(client_config_path(layout), ("\n".join(client) + "\n").encode())


def credentials(layout: Layout) -> Credentials | None:
    """The passwords ``write_material`` made (None: not a SASL cluster)."""
    if not protocol_of(layout).uses_sasl:
        return None
    path = layout.root / TLS_DIR / CREDENTIALS_FILE
    try:
        users = load_properties(path)
        return Credentials(users[NODE_USER], users[ADMIN_USER])
    except (OSError, KeyError) as exc:
        raise ClusterError(f"the cluster's credentials are unreadable: {exc}", path=str(path)) from None


def node_lines(layout: Layout, node: Node) -> list[str]:
    """A node's security settings, Kafka's names: its listeners' protocols, stores, SASL logins
    and the authorizer. ``listeners`` itself is the caller's (the broker listener is named
    ``broker_listener``)."""
    protocol = protocol_of(layout)
    name = broker_listener(layout)
    lines = [f"listener.security.protocol.map=CONTROLLER:{protocol.name},{name}:{protocol.name}"]
    if protocol is SecurityProtocol.PLAINTEXT:
        return lines
    tls = layout.root / TLS_DIR
    if protocol.uses_tls:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={tls / 'node.keystore.pem'}",
                  "ssl.truststore.type=PEM", f"ssl.truststore.location={tls / 'ca.pem'}"]
    if protocol.uses_sasl:
        creds = credentials(layout)
        assert creds is not None
        password = creds.node_password
        # PLAIN's JAAS is both sides: the node's own login, and the one user the listener knows
        plain = f'{PLAIN_MODULE} required username="{NODE_USER}" password="{password}" user_{NODE_USER}="{password}";'
        lines += [f"sasl.enabled.mechanisms={NODE_MECHANISM},{MECHANISM}",
                  f"sasl.mechanism.controller.protocol={NODE_MECHANISM}",
                  f"sasl.mechanism.inter.broker.protocol={NODE_MECHANISM}"]
        for listener in ("controller", name.lower()):
            lines += [f"listener.name.{listener}.{NODE_MECHANISM.lower()}.sasl.jaas.config={plain}",
                      f"listener.name.{listener}.{MECHANISM.lower()}.sasl.jaas.config={SCRAM_MODULE} required;"]
        users = (NODE_USER, ADMIN_USER)
    else:
        lines.append("ssl.client.auth=required")
        users = (f"CN={NODE_USER}", f"CN={ADMIN_USER}")
    lines.append(f"super.users={';'.join(f'User:{u}' for u in users)}")
    if node.role == "controller":
        lines += [f"authorizer.class.name={AUTHORIZER}", f"inter.broker.listener.name={name}"]
    return lines


_clients: dict[Path, tuple[float, ClientSecurity]] = {}


def client_security_of(layout: Layout) -> ClientSecurity:
    """How the cluster tools (status, the waits of up and start) reach the nodes: as
    client.properties says (read again when it changes)."""
    if protocol_of(layout) is SecurityProtocol.PLAINTEXT:
        return PLAINTEXT_CLIENT
    from engine.net.security_config import client_security

    path = client_config_path(layout)
    try:
        mtime = path.stat().st_mtime
        cached = _clients.get(path)
        if cached is None or cached[0] != mtime:
            _clients[path] = (mtime, client_security(load_properties(path), str(path)))
        return _clients[path][1]
    except (OSError, ConfigError) as exc:
        raise ClusterError(f"cannot reach the cluster's secured listeners: {exc}", path=str(path)) from None


__all__ = ["ADMIN_USER", "CLIENT_CONFIG", "Credentials", "MECHANISM", "NODE_MECHANISM", "NODE_USER", "PROTOCOLS", "broker_listener",
           "client_config_path", "client_security_of", "credentials", "node_lines", "protocol_of", "write_material"]
