"""The configs the controller checks, as facts read off Kafka 4.1.2's own ConfigDefs.

Topic configs are LogConfig's (name, type, default, valid values); their broker-wide synonyms
(ServerTopicConfigSynonyms: ``retention.ms`` <- ``log.retention.ms``, ``log.retention.minutes``,
``log.retention.hours``) and the defaults KafkaConfig gives those; and the broker configs Kafka
lets an operator change at run time (DynamicBrokerConfig.AllDynamicConfigs) with their KafkaConfig
types. Read with jshell on Kafka 4.1.2's jars; the values here are those facts, not Kafka's code.

``parse`` follows ConfigDef's parsing and validators, and its errors carry Kafka's wording
("Invalid value x for configuration segment.bytes: Not a number of type INT"), because operators'
tools print that message as it comes.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, NamedTuple


class ConfigKey(NamedTuple):
    name: str
    type: str  # ConfigDef.Type: BOOLEAN STRING INT SHORT LONG DOUBLE LIST CLASS PASSWORD
    default: str | None  # as DescribeConfigs prints it (ConfigDef.convertToString); None: no default
    # the validator: () none, ("at_least", n), ("between", lo, hi), ("one_of", *values),
    # ("list_of", *values), ("gzip_level",), ("replicas",) (throttled replica lists)
    check: tuple = ()
    internal: bool = False  # LogConfig's internal configs: settable, never described


class ConfigValueError(ValueError):
    """A value ConfigDef refuses; str() is Kafka's message (INVALID_CONFIG)."""


# DescribeConfigs' ConfigType ids (DescribeConfigsResponse.ConfigType)
CONFIG_TYPE_IDS = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6,
                   "LIST": 7, "CLASS": 8, "PASSWORD": 9}
# DescribeConfigs' ConfigSource ids
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 4, 5

_LONG_MAX = "9223372036854775807"
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def _keys(*rows: ConfigKey) -> dict[str, ConfigKey]:
    return {row.name: row for row in rows}


K = ConfigKey
# LogConfig.configDefCopy() of Kafka 4.1.2
TOPIC_CONFIGS: dict[str, ConfigKey] = _keys(
    K("cleanup.policy", "LIST", "delete", ("list_of", "compact", "delete")),
    K("compression.gzip.level", "INT", "-1", ("gzip_level",)),
    K("compression.lz4.level", "INT", "9", ("between", 1, 17)),
    K("compression.type", "STRING", "producer", ("one_of", *_COMPRESSION)),
    K("compression.zstd.level", "INT", "3", ("between", -131072, 22)),
    K("delete.retention.ms", "LONG", "86400000", ("at_least", 0)),
    K("file.delete.delay.ms", "LONG", "60000", ("at_least", 0)),
    K("flush.messages", "LONG", _LONG_MAX, ("at_least", 1)),
    K("flush.ms", "LONG", _LONG_MAX, ("at_least", 0)),
    K("follower.replication.throttled.replicas", "LIST", "", ("replicas",)),
    K("index.interval.bytes", "INT", "4096", ("at_least", 0)),
    K("internal.segment.bytes", "INT", None, (), internal=True),
    K("leader.replication.throttled.replicas", "LIST", "", ("replicas",)),
    K("local.retention.bytes", "LONG", "-2", ("at_least", -2)),
    K("local.retention.ms", "LONG", "-2", ("at_least", -2)),
    K("max.compaction.lag.ms", "LONG", _LONG_MAX, ("at_least", 1)),
    K("max.message.bytes", "INT", "1048588", ("at_least", 0)),
    K("message.timestamp.after.max.ms", "LONG", "3600000", ("at_least", 0)),
    K("message.timestamp.before.max.ms", "LONG", _LONG_MAX, ("at_least", 0)),
    K("message.timestamp.type", "STRING", "CreateTime", ("one_of", *_TIMESTAMP_TYPES)),
    K("min.cleanable.dirty.ratio", "DOUBLE", "0.5", ("between", 0, 1)),
    K("min.compaction.lag.ms", "LONG", "0", ("at_least", 0)),
    K("min.insync.replicas", "INT", "1", ("at_least", 1)),
    K("preallocate", "BOOLEAN", "false"),
    K("remote.log.copy.disable", "BOOLEAN", "false"),
    K("remote.log.delete.on.disable", "BOOLEAN", "false"),
    K("remote.storage.enable", "BOOLEAN", "false"),
    K("retention.bytes", "LONG", "-1"),
    K("retention.ms", "LONG", "604800000", ("at_least", -1)),
    K("segment.bytes", "INT", "1073741824", ("at_least", 1048576)),
    K("segment.index.bytes", "INT", "10485760", ("at_least", 4)),
    K("segment.jitter.ms", "LONG", "0", ("at_least", 0)),
    K("segment.ms", "LONG", "604800000", ("at_least", 1)),
    K("unclean.leader.election.enable", "BOOLEAN", "false"),
)

# ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: a topic config's broker-wide names, first
# wins, each with the factor that turns its unit into the topic config's (hours -> ms).
_SAME = ("compression.gzip.level", "compression.lz4.level", "compression.type", "compression.zstd.level",
         "min.insync.replicas", "unclean.leader.election.enable")
TOPIC_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    **{name: ((name, 1),) for name in _SAME},
    "cleanup.policy": (("log.cleanup.policy", 1),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1),),
    "max.message.bytes": (("message.max.bytes", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 1),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1),),
    "preallocate": (("log.preallocate", 1),),
    "retention.bytes": (("log.retention.bytes", 1),),
    "retention.ms": (("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                     ("log.retention.hours", 3_600_000)),
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", 3_600_000)),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", 3_600_000)),
}

# KafkaConfig's defaults of the synonyms that have one (the DEFAULT_CONFIG synonym of a topic config)
SERVER_DEFAULTS: dict[str, str] = {
    **{TOPIC_SYNONYMS[name][0][0]: TOPIC_CONFIGS[name].default for name in TOPIC_SYNONYMS
       if TOPIC_CONFIGS[name].default is not None},
    "log.retention.hours": "168", "log.roll.jitter.hours": "0", "log.roll.hours": "168",
    "log.flush.scheduler.interval.ms": _LONG_MAX,
}
for _unset in ("log.retention.ms", "log.roll.jitter.ms", "log.roll.ms", "log.flush.interval.ms"):
    del SERVER_DEFAULTS[_unset]  # no default in KafkaConfig: the next synonym decides
SERVER_TYPES: dict[str, str] = {"log.retention.minutes": "INT", "log.retention.hours": "INT",
                                "log.roll.jitter.hours": "INT", "log.roll.hours": "INT"}

# the dynamic broker configs that are not a topic config's synonym, with KafkaConfig's defaults
_BROKER_STRINGS = {
    "listener.security.protocol.map": "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    "listeners": "PLAINTEXT://:9092", "max.connections.per.ip.overrides": "",
    "sasl.kerberos.kinit.cmd": "/usr/bin/kinit", "sasl.kerberos.service.name": None,
    "sasl.mechanism.inter.broker.protocol": "GSSAPI", "ssl.endpoint.identification.algorithm": "https",
    "ssl.keymanager.algorithm": "SunX509", "ssl.keystore.location": None, "ssl.keystore.type": "JKS",
    "ssl.protocol": "TLSv1.3", "ssl.provider": None, "ssl.secure.random.implementation": None,
    "ssl.trustmanager.algorithm": "PKIX", "ssl.truststore.location": None, "ssl.truststore.type": "JKS",
}
_BROKER_LISTS = {
    "metric.reporters": "org.apache.kafka.common.metrics.JmxReporter", "sasl.enabled.mechanisms": "GSSAPI",
    "sasl.kerberos.principal.to.local.rules": "DEFAULT", "ssl.cipher.suites": "",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
}
_BROKER_DOUBLES = {
    "log.cleaner.io.buffer.load.factor": "0.9", "log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
    "sasl.kerberos.ticket.renew.jitter": "0.05", "sasl.kerberos.ticket.renew.window.factor": "0.8",
    "sasl.login.refresh.window.factor": "0.8", "sasl.login.refresh.window.jitter": "0.05",
}
_PASSWORDS = ("sasl.jaas.config", "ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
              "ssl.keystore.password", "ssl.truststore.certificates", "ssl.truststore.password")


def _dynamic_broker_configs() -> dict[str, ConfigKey]:
    """DynamicBrokerConfig.AllDynamicConfigs of Kafka 4.1.2, typed and checked as KafkaConfig does
    (the log.* ones as their topic configs)."""
    rows = [
        K("background.threads", "INT", "10", ("at_least", 1)),
        K("log.cleaner.backoff.ms", "LONG", "15000", ("at_least", 0)),
        K("log.cleaner.dedupe.buffer.size", "LONG", "134217728"),
        K("log.cleaner.io.buffer.size", "INT", "524288", ("at_least", 0)),
        K("log.cleaner.threads", "INT", "1", ("at_least", 0)),
        K("log.retention.ms", "LONG", None), K("log.roll.jitter.ms", "LONG", None),
        K("log.roll.ms", "LONG", None), K("log.flush.interval.ms", "LONG", None),
        K("max.connection.creation.rate", "INT", "2147483647", ("at_least", 0)),
        K("max.connections", "INT", "2147483647", ("at_least", 0)),
        K("max.connections.per.ip", "INT", "2147483647", ("at_least", 0)),
        K("num.io.threads", "INT", "8", ("at_least", 1)),
        K("num.network.threads", "INT", "3", ("at_least", 1)),
        K("num.recovery.threads.per.data.dir", "INT", "2", ("at_least", 1)),
        K("num.replica.fetchers", "INT", "1"),
        K("principal.builder.class", "CLASS",
          "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"),
        K("producer.id.expiration.ms", "INT", "86400000", ("at_least", 1)),
        K("remote.fetch.max.wait.ms", "INT", "500", ("at_least", 1)),
        K("remote.list.offsets.request.timeout.ms", "LONG", "30000", ("at_least", 1)),
        K("remote.log.index.file.cache.total.size.bytes", "LONG", "1073741824", ("at_least", 1)),
        K("remote.log.manager.copier.thread.pool.size", "INT", "10", ("at_least", 1)),
        K("remote.log.manager.copy.max.bytes.per.second", "LONG", _LONG_MAX, ("at_least", 1)),
        K("remote.log.manager.expiration.thread.pool.size", "INT", "10", ("at_least", 1)),
        K("remote.log.manager.fetch.max.bytes.per.second", "LONG", _LONG_MAX, ("at_least", 1)),
        K("remote.log.reader.threads", "INT", "10", ("at_least", 1)),
        K("sasl.kerberos.min.time.before.relogin", "LONG", "60000"),
        K("sasl.login.refresh.buffer.seconds", "SHORT", "300"),
        K("sasl.login.refresh.min.period.seconds", "SHORT", "60"),
        K("ssl.client.auth", "STRING", "none", ("one_of", "required", "requested", "none")),
        K("ssl.engine.factory.class", "CLASS", None),
        K("transaction.partition.verification.enable", "BOOLEAN", "true"),
        *(K(name, "STRING", default) for name, default in _BROKER_STRINGS.items()),
        *(K(name, "LIST", default) for name, default in _BROKER_LISTS.items()),
        *(K(name, "DOUBLE", default) for name, default in _BROKER_DOUBLES.items()),
        *(K(name, "PASSWORD", None) for name in _PASSWORDS),
    ]
    for topic_name, synonyms in TOPIC_SYNONYMS.items():
        server_name = synonyms[0][0]
        if server_name not in ("log.retention.ms", "log.roll.jitter.ms", "log.roll.ms", "log.flush.interval.ms"):
            topic = TOPIC_CONFIGS[topic_name]
            rows.append(ConfigKey(server_name, *topic[1:]))  # the topic config under its broker name
    return _keys(*sorted(rows))


BROKER_DYNAMIC_CONFIGS: dict[str, ConfigKey] = _dynamic_broker_configs()


def is_sensitive(key: ConfigKey | None) -> bool:
    """PASSWORD configs, and names Kafka cannot type, are never shown (KafkaConfig.maybeSensitive)."""
    return key is None or key.type == "PASSWORD"


# -- ConfigDef parsing --------------------------------------------------------------------

_INT_BOUNDS = {"INT": 1 << 31, "SHORT": 1 << 15, "LONG": 1 << 63}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def java_int(text: str) -> int | None:
    """``text`` as Java's Integer.parseInt reads it: a sign and digits, nothing around them (no
    trimming, unlike ConfigDef), within an int; None where it throws NumberFormatException."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -_INT_BOUNDS["INT"] <= value < _INT_BOUNDS["INT"] else None


def _invalid(key: ConfigKey, value: Any, why: str) -> ConfigValueError:
    return ConfigValueError(f"Invalid value {value} for configuration {key.name}: {why}")


def split_list(text: str) -> list[str]:
    """ConfigDef's LIST: comma separated, blanks around commas dropped, trailing empties dropped
    (Java's String.split)."""
    text = text.strip()
    if not text:
        return []
    parts = re.split(r"\s*,\s*", text)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse(key: ConfigKey, text: str) -> Any:
    """``text`` as ConfigDef parses and validates it for ``key``; ConfigValueError if it cannot."""
    trimmed = text.strip()
    kind = key.type
    if kind == "BOOLEAN":
        if trimmed.lower() not in ("true", "false"):
            raise _invalid(key, text, "Expected value to be either true or false")
        value: Any = trimmed.lower() == "true"
    elif kind in _INT_BOUNDS:
        bound = _INT_BOUNDS[kind]
        if not _INTEGER.fullmatch(trimmed) or not -bound <= int(trimmed) < bound:
            raise _invalid(key, text, f"Not a number of type {kind}")
        value = int(trimmed)
    elif kind == "DOUBLE":
        if not _DOUBLE.fullmatch(trimmed):
            raise _invalid(key, text, "Not a number of type DOUBLE")
        value = float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
    elif kind == "LIST":
        value = split_list(trimmed)
    else:  # STRING, CLASS, PASSWORD
        value = trimmed
    _validate(key, value)
    return value


def _validate(key: ConfigKey, value: Any) -> None:
    if not key.check:
        return
    rule, *args = key.check
    if rule in ("at_least", "between"):
        if value < args[0]:
            raise _invalid(key, format_value(key, value), f"Value must be at least {args[0]}")
        if rule == "between" and value > args[1]:
            raise _invalid(key, format_value(key, value), f"Value must be no more than {args[1]}")
    elif rule == "one_of" and value not in args:
        raise _invalid(key, value, "String must be one of: " + ", ".join(args))
    elif rule == "list_of":
        for item in value:
            if item not in args:
                raise _invalid(key, item, "String must be one of: " + ", ".join(args))
    elif rule == "gzip_level" and value != -1 and not 1 <= value <= 9:
        raise _invalid(key, value, "Value must be between 1 and 9 or equal to -1")
    elif rule == "replicas" and "".join(value).strip() != "*" and not all(
            _REPLICA.fullmatch(item.strip()) or not item.strip() for item in value):
        raise _invalid(key, "[" + ", ".join(value) + "]",
                       f"{key.name} must be the literal '*' or a list of replicas in the following format: "
                       "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def format_value(key: ConfigKey, value: Any) -> str:
    """A parsed value as ConfigDef.convertToString prints it (Java's number and list forms)."""
    if key.type == "BOOLEAN":
        return "true" if value else "false"
    if key.type == "LIST":
        return ",".join(value)
    if key.type == "DOUBLE":
        return java_double(value)
    return str(value)


def java_double(value: float) -> str:
    """Java's Double.toString: the shortest digits, plain between 1e-3 and 1e7, else d.dddE±n."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(float(value))  # Python prints these plainly, with the same shortest digits
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + int(exponent)}"


def canonical(key: ConfigKey, text: str) -> str:
    """A stored value as Kafka shows it once parsed (" 100 " -> "100", "a, b" -> "a,b")."""
    try:
        return format_value(key, parse(key, text))
    except ConfigValueError:
        return text
