"""``kraftd cluster up --security PROTOCOL``: a local cluster secured end to end.

The configs every protocol writes are read back by the controller's and the broker's own config
loaders (no process). One SASL_SSL cluster (three controllers, two simulated brokers) runs through
the real CLI in subprocesses: ``status`` reaches it with the client.properties ``up`` made,
metashell and ``kraftd quorum`` attach with it as --command-config, a PLAINTEXT client is turned
away in one line. A mutual-TLS cluster comes up and is attached to the same way. Every process is
SIGKILLed at the end, failure or not; waits are safety nets, never performance claims.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from engine.common.java_properties import load_properties
from engine.net.channel_security import SecurityProtocol
from engine.server.broker_settings import load_broker_settings
from engine.server.controller_node import load_controller_settings
from engine.cluster import security as cluster_security
from engine.cluster.layout import Settings, load_layout, plan_layout, write_configs
from tests.engine.cluster.test_cluster_tool import Cluster

# processes, sockets and timers of their own: out of the fast tier
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
TOOL_TIMEOUT_S = 120


def owner_only(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("protocol", cluster_security.PROTOCOLS)
def test_every_protocol_writes_configs_our_nodes_accept(protocol, tmp_path):
    layout = plan_layout(tmp_path, controllers=1, brokers=1, racks=0, ports=[19001, 19002],
                         settings=Settings(security_protocol=protocol))
    cluster_security.write_material(layout)
    write_configs(layout)
    controller = load_controller_settings(layout.config_path(layout.node("controller-1")))
    broker = load_broker_settings(layout.config_path(layout.node("broker-1")))
    wanted = SecurityProtocol[protocol]
    assert controller.listener_security.protocol is wanted and controller.client_security.protocol is wanted
    assert [s.protocol for s in broker.listener_securities] == [wanted]
    assert broker.controller_security.protocol is wanted and broker.inter_broker_security.protocol is wanted
    assert broker.advertised[0].name == protocol and broker.inter_broker_listener == protocol
    client = cluster_security.client_security_of(layout)
    assert client.protocol is wanted
    if protocol == "PLAINTEXT":
        assert not (tmp_path / "tls").exists() and not (tmp_path / "client.properties").exists()
        assert not controller.controller.authorizer.enabled
        return
    # the controllers authorize, with the nodes' and the operator's principals as super users, and
    # reach the brokers (unclean recovery) on the brokers' own listener, secured the same way
    assert controller.controller.authorizer.enabled
    assert (controller.broker_listener, controller.broker_security.protocol) == (protocol, wanted)
    assert owner_only(tmp_path / "client.properties")
    if wanted.uses_sasl:
        # the operator with SCRAM; the nodes with PLAIN among themselves (SCRAM needs the image a
        # leader commits, so controllers could never vote one in with it)
        assert (client.sasl_mechanism, client.username) == ("SCRAM-SHA-512", "admin")
        for node_client in (controller.client_security, broker.controller_security, broker.inter_broker_security,
                            controller.broker_security):
            assert (node_client.sasl_mechanism, node_client.username) == ("PLAIN", "kraftd")
        for listener in (controller.listener_security, *broker.listener_securities):
            assert listener.sasl_mechanisms == ("PLAIN", "SCRAM-SHA-512") and list(listener.plain_users) == ["kraftd"]
        assert owner_only(tmp_path / "tls" / "credentials.properties")
    if wanted.uses_tls:
        assert owner_only(tmp_path / "tls" / "node.keystore.pem")
        assert client.ssl_context is not None and client.ssl_context.check_hostname
    if protocol == "SSL":
        assert owner_only(tmp_path / "tls" / "admin.keystore.pem")
        props = load_properties(layout.config_path(layout.node("controller-1")))
        assert props["ssl.client.auth"] == "required" and props["super.users"] == "User:CN=kraftd;User:CN=admin"


def metashell(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metashell.cli", *args], capture_output=True, text=True, cwd=REPO,
                          stdin=subprocess.DEVNULL, timeout=TOOL_TIMEOUT_S)


def kraftd_quorum(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine.tools.cli", "quorum", *args], capture_output=True, text=True,
                          cwd=REPO, stdin=subprocess.DEVNULL, timeout=TOOL_TIMEOUT_S)


def up(root: Path, protocol: str, brokers: int, controllers: int = 1) -> Cluster:
    cluster = Cluster(root)
    try:
        cluster.up_output = cluster.ok("up", "--controllers", str(controllers), "--brokers", str(brokers), "--racks", "0",
                                       "--security", protocol.lower(), "--heartbeat-interval-ms", "500")
    except BaseException:
        cluster.kill_all()
        raise
    return cluster


@pytest.fixture(scope="module")
def sasl_ssl(tmp_path_factory) -> Cluster:
    cluster = up(tmp_path_factory.mktemp("sasl-ssl-cluster") / "state", "SASL_SSL", 2, controllers=3)
    try:
        yield cluster
    finally:
        cluster.kill_all()


def test_up_prints_the_command_config_and_status_reaches_the_secured_nodes(sasl_ssl):
    lines = sasl_ssl.up_output.splitlines()
    assert lines[-1] == f"command.config={sasl_ssl.root / 'client.properties'}"
    assert sasl_ssl.registry()["settings"]["security_protocol"] == "SASL_SSL"
    rows = sasl_ssl.status()  # DescribeQuorum over SASL_SSL, logged in as admin
    # three controllers elected one of them: they logged in to one another for their votes
    assert sorted(rows[f"controller-{i}"]["STATE"] for i in (1, 2, 3)) == ["leader", "voter", "voter"]
    assert [rows[f"broker-{i}"]["STATE"] for i in (1, 2)] == ["unfenced", "unfenced"]
    props = (sasl_ssl.root / "broker-1" / "server.properties").read_text()
    assert "listeners=SASL_SSL://127.0.0.1:" in props and "inter.broker.listener.name=SASL_SSL" in props
    # the configs hold the nodes' password: owner-only, as the keys and client.properties
    assert owner_only(sasl_ssl.root / "broker-1" / "server.properties")
    assert owner_only(sasl_ssl.root / "controller-1" / "server.properties")


def test_metashell_and_kraftd_quorum_attach_with_the_command_config(sasl_ssl):
    layout = load_layout(sasl_ssl.root)
    controllers, config = layout.bootstrap("controller"), str(sasl_ssl.root / "client.properties")
    done = metashell("--bootstrap-controller", controllers, "--command-config", config, "-c", "ls /brokers")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "2"]
    done = kraftd_quorum("--bootstrap-controller", controllers, "--command-config", config, "describe", "--status")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^LeaderId:\s+300[123]$", done.stdout, re.MULTILINE), done.stdout
    assert done.stdout.count('"id": 300') == 3  # CurrentVoters


def test_a_client_without_the_command_config_is_turned_away_in_one_line(sasl_ssl):
    layout = load_layout(sasl_ssl.root)
    done = kraftd_quorum("--bootstrap-controller", layout.bootstrap("controller"), "describe", "--status")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and layout.node("controller-1").address in done.stderr
    assert "set security.protocol to SSL or SASL_SSL" in done.stderr  # the hint, naming no secret
    assert "leader" in [sasl_ssl.state(f"controller-{i}") for i in (1, 2, 3)]  # and the quorum keeps serving


def test_mutual_tls_cluster_comes_up_and_is_attached_to(tmp_path):
    cluster = up(tmp_path / "state", "SSL", 1)
    try:
        assert cluster.state("broker-1") == "unfenced"
        layout = load_layout(cluster.root)
        done = metashell("--bootstrap-controller", layout.bootstrap("controller"), "--command-config",
                         str(cluster.root / "client.properties"), "-c", "ls /brokers")
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["1"]
        assert cluster.ok("down").splitlines()[0] == "broker-1: stopped"
    finally:
        cluster.kill_all()
