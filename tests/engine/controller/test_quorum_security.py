"""Our own quorum, secured: three kraftd controllers whose controller listener is SASL_SSL (PLAIN)
or SSL with client certificates required elect a leader and replicate over it (Raft's client and
server both secured, by Kafka's config names), and ``kraftd quorum --command-config`` describes
them as Kafka's tool would, or says in one line why it cannot.

The SASL quorum runs the StandardAuthorizer with the controllers' own user as the only super user,
so each Raft request is authorized as the SASL principal, and a user without ACLs is refused."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from engine.controller.standard_authorizer import STANDARD_AUTHORIZER
from tests.node_quorum import start_quorum, wait_until
from tests.tls_material import TestCA, write_pem

KEY_PASSWORD = "key-secret-5e1"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def _jaas(username: str, password: str, **users: str) -> str:
    extra = "".join(f' user_{name}="{secret}"' for name, secret in users.items())
    return f'{PLAIN_MODULE} required username="{username}" password="{password}"{extra};'


def _server_props(tmp_path: Path, ca: TestCA, protocol: str) -> dict[str, str]:
    pem = write_pem(tmp_path / "pki", "controller", ca.issue("controller", organization="metashell"),
                    key_password=KEY_PASSWORD)
    props = {"listener.security.protocol.map": f"CONTROLLER:{protocol}",
             "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem.keystore), "ssl.key.password": KEY_PASSWORD,
             "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pem.truststore)}
    if protocol == "SASL_SSL":
        props.update({"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.controller.protocol": "PLAIN",
                      "listener.name.controller.plain.sasl.jaas.config":
                          _jaas("ctl", "ctl-secret", ctl="ctl-secret", ops="ops-secret"),
                      "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ctl"})
    else:
        props["ssl.client.auth"] = "required"
    return props


def _client_config(path: Path, ca: TestCA, protocol: str, *, user: str = "ctl", password: str = "ctl-secret",
                   certificate: bool = True) -> Path:
    lines = [f"security.protocol={protocol}", "ssl.truststore.type=PEM",
             f"ssl.truststore.location={write_pem(path.parent, 'trust-' + path.stem, ca.issue('unused')).truststore}"]
    if protocol == "SASL_SSL":
        lines += ["sasl.mechanism=PLAIN", f"sasl.jaas.config={_jaas(user, password)}"]
    elif certificate:
        pem = write_pem(path.parent, path.stem, ca.issue("ops"), key_password=KEY_PASSWORD)
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={pem.keystore}", f"ssl.key.password={KEY_PASSWORD}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def _kraftd_quorum(bootstrap: str, config: Path | None) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "engine.tools.cli", "quorum", "--bootstrap-controller", bootstrap]
    if config is not None:
        args += ["--command-config", str(config)]
    return subprocess.run([*args, "describe", "--status"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _one_line_refusal(done: subprocess.CompletedProcess, *words: str, secrets: tuple[str, ...] = ()) -> str:
    assert done.returncode == 1, done
    assert done.stdout == "" and "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line, line
    assert any(word in line for word in words), line
    assert not any(secret in done.stderr for secret in secrets), line
    return line


@pytest.mark.parametrize("protocol", ["SASL_SSL", "SSL"])
@pytest.mark.slow
def test_a_secured_quorum_replicates_and_kraftd_quorum_describes_it(tmp_path: Path, protocol: str) -> None:
    ca = TestCA()
    props = _server_props(tmp_path, ca, protocol)

    async def scenario() -> None:
        _, nodes = await start_quorum(tmp_path, 3, **props)
        try:
            # Raft over the secured listener: a leader, and every voter's log reaching its commits
            leader = await wait_until(lambda: next((n for n in nodes if n.driver.is_leader), None), 60, "a leader")
            await wait_until(lambda: min(n.last_committed_offset for n in nodes) >= 5, 60, "the followers' commits")
            bootstrap = ",".join(f"127.0.0.1:{n.driver.address[1]}" for n in nodes)
            good = await asyncio.to_thread(_kraftd_quorum, bootstrap, _client_config(tmp_path / "good.properties",
                                                                                       ca, protocol))
            assert good.returncode == 0, good.stderr
            status = dict(line.split(":", 1) for line in good.stdout.splitlines())
            assert status["LeaderId"].strip() == str(leader.settings.node_id)
            assert "User:" not in good.stdout and "secret" not in good.stdout
            # the refusals, each one line with the reason, nothing served
            plaintext = await asyncio.to_thread(_kraftd_quorum, bootstrap, None)
            _one_line_refusal(plaintext, "TLS listener", "closed")
            stranger = await asyncio.to_thread(_kraftd_quorum, bootstrap, _client_config(
                tmp_path / "stranger.properties", TestCA("another CA"), protocol))
            _one_line_refusal(stranger, "certificate verify failed")
            if protocol == "SASL_SSL":
                wrong = await asyncio.to_thread(_kraftd_quorum, bootstrap, _client_config(
                    tmp_path / "wrong.properties", ca, protocol, password="not-it-77"))
                _one_line_refusal(wrong, "Invalid username or password", secrets=("not-it-77", "ctl-secret"))
                ops = await asyncio.to_thread(_kraftd_quorum, bootstrap, _client_config(
                    tmp_path / "ops.properties", ca, protocol, user="ops", password="ops-secret"))
                _one_line_refusal(ops, "CLUSTER_AUTHORIZATION_FAILED", secrets=("ops-secret",))
            else:
                anonymous = await asyncio.to_thread(_kraftd_quorum, bootstrap, _client_config(
                    tmp_path / "nocert.properties", ca, protocol, certificate=False))
                _one_line_refusal(anonymous, "certificate", "closed")
            # and the quorum still serves
            again = await asyncio.to_thread(_kraftd_quorum, bootstrap, tmp_path / "good.properties")
            assert again.returncode == 0, again.stderr
        finally:
            for node in nodes:
                await node.stop()

    asyncio.run(scenario())
