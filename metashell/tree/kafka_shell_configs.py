"""The configs the newest ``kafka-metadata-shell`` shows under ``/image/configs``.

Kafka 4.3's shell loads the image through a ``DefaultSupportedConfigChecker``: a ConfigRecord
whose name its version does not define for the resource's type is dropped on replay, so a config
Kafka has retired (``message.timestamp.difference.max.ms``, gone in 4.0) or one of a type it does
not check is not in its tree, and a resource left with none is not listed. Broker configs are all
kept. Kafka 4.1's shell shows every config.

The names are facts read off Kafka 4.3.1 (``LogConfig.configNames()``,
``ClientMetricsConfigs.configDef().names()``, ``GroupConfig.CONFIG_DEF.names()``).
"""

from __future__ import annotations

from engine.common.config_resource import ConfigResourceType

KAFKA_VERSION = "4.3.1"

TOPIC_CONFIG_NAMES = frozenset({
    "cleanup.policy", "compression.gzip.level", "compression.lz4.level", "compression.type",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", "internal.segment.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes", "local.retention.ms",
    "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "remote.log.copy.disable",
    "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes",
    "segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
})
CLIENT_METRICS_CONFIG_NAMES = frozenset({"interval.ms", "match", "metrics"})
GROUP_CONFIG_NAMES = frozenset({
    "consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
    "share.assignment.interval.ms", "share.auto.offset.reset", "share.delivery.count.limit",
    "share.heartbeat.interval.ms", "share.isolation.level", "share.partition.max.record.locks",
    "share.record.lock.duration.ms", "share.renew.acknowledge.enable", "share.session.timeout.ms",
    "streams.assignment.interval.ms", "streams.heartbeat.interval.ms", "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas", "streams.session.timeout.ms",
})
_NAMES_BY_TYPE = {ConfigResourceType.TOPIC: TOPIC_CONFIG_NAMES,
                  ConfigResourceType.CLIENT_METRICS: CLIENT_METRICS_CONFIG_NAMES,
                  ConfigResourceType.GROUP: GROUP_CONFIG_NAMES}


def shown_in_kafka_shell(resource_type: int, name: str) -> bool:
    """Whether Kafka's shell keeps config ``name`` of a resource of ``resource_type``."""
    if resource_type == ConfigResourceType.BROKER:
        return True
    names = _NAMES_BY_TYPE.get(resource_type)
    return names is not None and name in names
