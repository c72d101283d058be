"""The controller's settings, by Kafka's config names and with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from engine.common.errors import ConfigError
from engine.common.server_config import JAVA_INT_MAX, JAVA_LONG_MAX, int_setting
from engine.controller.standard_authorizer import AuthorizerConfig


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    node_id: int = 0
    cluster_id: str = ""  # from meta.properties: a BrokerRegistration with another one is refused
    broker_session_timeout_ms: int = 9000  # broker.session.timeout.ms
    broker_heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    default_replication_factor: int = 1  # default.replication.factor
    num_partitions: int = 1  # num.partitions
    min_insync_replicas: int = 1  # min.insync.replicas (the static default)
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable (the static default)
    delete_topic_enable: bool = True  # delete.topic.enable
    max_idle_interval_ms: int = 500  # metadata.max.idle.interval.ms
    # how many broker sessions may expire per poll: Kafka fences one broker at a time
    fence_per_poll: int = 1
    # KIP-966 unclean recovery (engine/controller/unclean_recovery.py): off by default, as Kafka has none
    unclean_recovery_manager_enabled: bool = False  # unclean.recovery.manager.enabled
    unclean_recovery_strategy: str = ""  # unclean.recovery.strategy: Proactive|Balanced|Manual ("" derives it)
    unclean_recovery_timeout_ms: int = 300000  # unclean.recovery.timeout.ms
    # Delegation tokens (KIP-48): off unless a secret is set, as in Kafka
    delegation_token_secret_key: str = field(default="", repr=False)  # delegation.token.secret.key (a password)
    delegation_token_max_lifetime_ms: int = 604_800_000  # delegation.token.max.lifetime.ms (7 days)
    delegation_token_expiry_time_ms: int = 86_400_000  # delegation.token.expiry.time.ms (1 day)
    delegation_token_expiry_check_interval_ms: int = 3_600_000  # delegation.token.expiry.check.interval.ms
    # authorizer.class.name, super.users, allow.everyone.if.no.acl.found (none: everything allowed)
    authorizer: AuthorizerConfig = field(default_factory=AuthorizerConfig)

    @classmethod
    def from_properties(cls, node_id: int, props: Mapping[str, str], where: str = "",
                        cluster_id: str = "") -> "ControllerConfig":
        def integer(key: str, default: int, maximum: int = JAVA_INT_MAX) -> int:
            return int_setting(props, key, default, 1, maximum, where)

        def boolean(key: str, default: bool) -> bool:
            text = props.get(key, "").strip().lower()
            if not text:
                return default
            if text not in ("true", "false"):
                raise ConfigError(f"{key} must be true or false, got {text!r}", path=where)
            return text == "true"

        return cls(node_id=node_id, cluster_id=cluster_id,
                   broker_session_timeout_ms=integer("broker.session.timeout.ms", 9000),
                   broker_heartbeat_interval_ms=integer("broker.heartbeat.interval.ms", 2000),
                   default_replication_factor=integer("default.replication.factor", 1),
                   num_partitions=integer("num.partitions", 1),
                   min_insync_replicas=integer("min.insync.replicas", 1),
                   unclean_leader_election_enable=boolean("unclean.leader.election.enable", False),
                   delete_topic_enable=boolean("delete.topic.enable", True),
                   max_idle_interval_ms=integer("metadata.max.idle.interval.ms", 500),
                   unclean_recovery_manager_enabled=boolean("unclean.recovery.manager.enabled", False),
                   unclean_recovery_strategy=strategy(props.get("unclean.recovery.strategy", ""), where),
                   unclean_recovery_timeout_ms=integer("unclean.recovery.timeout.ms", 300000, JAVA_LONG_MAX),
                   delegation_token_secret_key=props.get("delegation.token.secret.key", "").strip(),
                   delegation_token_max_lifetime_ms=integer("delegation.token.max.lifetime.ms", 604_800_000,
                                                            JAVA_LONG_MAX),
                   delegation_token_expiry_time_ms=integer("delegation.token.expiry.time.ms", 86_400_000,
                                                           JAVA_LONG_MAX),
                   delegation_token_expiry_check_interval_ms=integer("delegation.token.expiry.check.interval.ms",
                                                                     3_600_000, JAVA_LONG_MAX),
                   authorizer=AuthorizerConfig.from_properties(props, where))


def strategy(text: str, where: str = "") -> str:
    """unclean.recovery.strategy as written (any case): Proactive, Balanced, Manual, or "" (unset)."""
    names = {"proactive": "Proactive", "balanced": "Balanced", "manual": "Manual"}
    key = text.strip().lower()
    if key and key not in names:
        raise ConfigError(f"unclean.recovery.strategy must be Proactive, Balanced or Manual, got {text!r}", path=where)
    return names.get(key, "")
