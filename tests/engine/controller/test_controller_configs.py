"""Configs: IncrementalAlterConfigs (44), AlterConfigs (33), DescribeConfigs (32).

Rhythm of Kafka's ConfigurationControlManagerTest: command, response, replay, state. Messages and
rules are Kafka 4.1.2's (read with jshell off LogConfig, ConfigurationControlManager and
ControllerConfigurationValidator)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine.controller import config_defs as defs
from engine.controller.config_control import (
    COMMANDS, alter_configs, alter_resource, clear_elr_records, describe_configs, elr_enabled,
    elr_safety_records, incremental_alter_configs)
from engine.controller.controller_config import ControllerConfig
from engine.controller.feature_control import supported_feature_ranges
from engine.image.metadata_version import BY_NAME, default_feature_levels, record_versions
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module
from tests.controller_helpers import bootstrapped, context, new_uuid, replayed, request

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER = 2, 4
_inc = protocol_module("incremental_alter_configs", 1, "request")
_leg = protocol_module("alter_configs", 2, "request")
_desc = protocol_module("describe_configs", 4, "request")


def broker_record(image: Any, broker_id: int, features: dict[str, tuple[int, int]] | None = None) -> Any:
    """A RegisterBrokerRecord at the image's version, telling ``features`` as supported ranges
    (by default what this controller supports, as a Kafka 4.3 broker tells)."""
    features = supported_feature_ranges() if features is None else features
    version = record_versions(image.metadata_version).register_broker
    cls = m.RECORD_CLASSES[(0, version)]
    feature_cls = next(getattr(m, n) for n in dir(m) if n == f"RegisterBrokerRecordV{version}BrokerFeature")
    values = dict(broker_id=i32(broker_id), incarnation_id=new_uuid(broker_id), broker_epoch=i64(broker_id),
                  end_points=(), rack=None, fenced=False, in_controlled_shutdown=False,
                  is_migrating_zk_broker=False, log_dirs=(new_uuid(1000 + broker_id),),
                  features=tuple(feature_cls(name=n, min_supported_version=i16(lo), max_supported_version=i16(hi))
                                 for n, (lo, hi) in features.items()))
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def cluster(release: str = "4.1-IV1", elr: bool | None = None, brokers: dict | None = None,
            configs: dict | None = None, topics: tuple[str, ...] = ("foo",), elr_of_foo: tuple = ()) -> Any:
    """An image after bootstrap, broker registrations, configs and topics, all replayed."""
    features = default_feature_levels(BY_NAME[release])
    if elr is not None:
        features["eligible.leader.replicas.version"] = int(elr)
    image = bootstrapped(release, features)
    records: list[Any] = [broker_record(image, b, f) for b, f in (brokers or {1: None, 2: None}).items()]
    for (rtype, name), values in (configs or {}).items():
        records += [m.ConfigRecordV0(resource_type=i8(rtype), resource_name=name, name=k, value=v)
                    for k, v in values.items()]
    version = record_versions(image.metadata_version).partition
    for n, topic in enumerate(topics):
        topic_id = new_uuid(500 + n)
        records.append(m.TopicRecordV0(name=topic, topic_id=topic_id))
        values = dict(partition_id=i32(0), topic_id=topic_id, replicas=(i32(1), i32(2)), isr=(i32(1),),
                      removing_replicas=(), adding_replicas=(), leader=i32(1), leader_epoch=i32(0),
                      partition_epoch=i32(0), directories=(new_uuid(1001), new_uuid(1002)))
        if version >= 2 and topic == "foo" and elr_of_foo:
            values["eligible_leader_replicas"] = tuple(map(i32, elr_of_foo))
        if version == 0:
            del values["directories"]
        records.append(m.RECORD_CLASSES[(3, version)](**values))
    return replayed(image, type("R", (), {"records": records})())


def incremental(*resources: tuple[int, str, list], validate_only: bool = False) -> Any:
    return request("incremental_alter_configs", 1, validate_only=validate_only, resources=tuple(
        _inc.AlterConfigsResource(resource_type=i8(t), resource_name=n, configs=tuple(
            _inc.AlterableConfig(name=k, config_operation=i8(op), value=v) for k, op, v in ops))
        for t, n, ops in resources))


def legacy(*resources: tuple[int, str, dict], validate_only: bool = False) -> Any:
    return request("alter_configs", 2, validate_only=validate_only, resources=tuple(
        _leg.AlterConfigsResource(resource_type=i8(t), resource_name=n, configs=tuple(
            _leg.AlterableConfig(name=k, value=v) for k, v in configs.items()))
        for t, n, configs in resources))


def errors(result: Any) -> list[tuple[int, str, Any, str | None]]:
    return [(r.resource_type, r.resource_name, r.error_code, r.error_message) for r in result.response.responses]


def config(resource_type: int, name: str, key: str, value: str | None) -> Any:
    return m.ConfigRecordV0(resource_type=i8(resource_type), resource_name=name, name=key, value=value)


def test_commands_are_served_at_kafkas_versions():
    assert [(c.api_key, c.min_version, c.max_version, c.read_only) for c in COMMANDS] == [
        (44, 0, 1, False), (33, 0, 2, False), (32, 1, 4, True)]


# -- IncrementalAlterConfigs ---------------------------------------------------------------

def test_set_then_delete_a_topic_config():
    image = cluster()
    result = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("retention.ms", SET, "1000")])))
    assert errors(result) == [(TOPIC, "foo", ErrorCode.none, None)]
    assert result.records == [config(TOPIC, "foo", "retention.ms", "1000")] and result.atomic
    image = replayed(image, result)
    assert image.configs[(TOPIC, "foo")] == {"retention.ms": "1000"}
    # the same value again writes nothing for a topic
    again = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("retention.ms", SET, "1000")])))
    assert again.records == [] and errors(again)[0][2] == ErrorCode.none
    deleted = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("retention.ms", DELETE, None)])))
    assert deleted.records == [config(TOPIC, "foo", "retention.ms", None)]
    assert (TOPIC, "foo") not in replayed(image, deleted).configs


def test_a_broker_record_is_written_even_when_unchanged():
    image = cluster(elr=False, configs={(BROKER, "1"): {"background.threads": "4"}})
    result = incremental_alter_configs(context(image), incremental((BROKER, "1", [("background.threads", SET, "4")])))
    assert result.records == [config(BROKER, "1", "background.threads", "4")]


def test_append_and_subtract_a_list_from_its_default():
    image = cluster()
    result = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("cleanup.policy", APPEND, "compact")])))
    assert result.records == [config(TOPIC, "foo", "cleanup.policy", "delete,compact")]
    image = replayed(image, result)
    result = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("cleanup.policy", SUBTRACT, "delete")])))
    assert result.records == [config(TOPIC, "foo", "cleanup.policy", "compact")]
    # appending what is there already changes nothing
    image = replayed(image, result)
    assert incremental_alter_configs(context(image), incremental(
        (TOPIC, "foo", [("cleanup.policy", APPEND, "compact")]))).records == []


def test_append_to_a_key_that_is_not_a_list():
    result = incremental_alter_configs(context(cluster()), incremental((TOPIC, "foo", [("retention.ms", APPEND, "1")])))
    assert errors(result) == [(TOPIC, "foo", ErrorCode.invalid_config,
                               "Can't APPEND to key retention.ms because its type is not LIST.")]
    assert result.records == []


@pytest.mark.parametrize("key, value, message", [
    ("foo.bar", "1", "Unknown topic config name: foo.bar"),
    ("segment.bytes", "x", "Invalid value x for configuration segment.bytes: Not a number of type INT"),
    ("segment.bytes", "0", "Invalid value 0 for configuration segment.bytes: Value must be at least 1048576"),
    ("segment.bytes", "99999999999", "Invalid value 99999999999 for configuration segment.bytes: Not a number of type INT"),
    ("compression.type", "GZIP", "Invalid value GZIP for configuration compression.type: String must be one of: "
                                 "uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: "
                                    "Value must be between 1 and 9 or equal to -1"),
    ("cleanup.policy", "compac", "Invalid value compac for configuration cleanup.policy: String must be one of: "
                                 "compact, delete"),
    ("min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: "
                                         "Value must be no more than 1"),
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ("retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
    ("leader.replication.throttled.replicas", "x",
     "Invalid value [x] for configuration leader.replication.throttled.replicas: leader.replication.throttled."
     "replicas must be the literal '*' or a list of replicas in the following format: "
     "[partitionId]:[brokerId],[partitionId]:[brokerId],..."),
])
def test_topic_config_validation_as_logconfig(key, value, message):
    result = incremental_alter_configs(context(cluster()), incremental((TOPIC, "foo", [(key, SET, value)])))
    assert errors(result) == [(TOPIC, "foo", ErrorCode.invalid_config, message)]
    assert result.records == []


@pytest.mark.parametrize("key, value", [
    ("segment.bytes", " 2000000 "), ("cleanup.policy", "compact, delete"), ("cleanup.policy", ""),
    ("preallocate", " TRUE "), ("leader.replication.throttled.replicas", "*"),
    ("leader.replication.throttled.replicas", "0:1, 1:2"), ("min.cleanable.dirty.ratio", "1e-1"),
    ("internal.segment.bytes", "5"), ("retention.bytes", "-5"),
])
def test_values_kafka_accepts_are_stored_as_given(key, value):
    result = incremental_alter_configs(context(cluster()), incremental((TOPIC, "foo", [(key, SET, value)])))
    assert result.records == [config(TOPIC, "foo", key, value)]


def test_compaction_lags_must_not_cross():
    result = incremental_alter_configs(context(cluster()), incremental(
        (TOPIC, "foo", [("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")])))
    assert errors(result)[0][2:] == (ErrorCode.invalid_config,
                                     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")


def test_resources_that_do_not_exist_or_cannot_be_named():
    result = incremental_alter_configs(context(cluster()), incremental(
        (TOPIC, "bar", [("retention.ms", SET, "1")]),
        (TOPIC, "", [("retention.ms", SET, "1")]),
        (TOPIC, "a/b", [("retention.ms", SET, "1")]),
        (BROKER, "7", [("background.threads", SET, "4")]),
        (BROKER, "x", [("background.threads", SET, "4")]),
        (BROKER, "-1", [("background.threads", SET, "4")]),
        (TOPIC, "foo", [("retention.ms", SET, "1")])))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.unknown_topic_or_partition, "The topic 'bar' does not exist."),
        (ErrorCode.invalid_request, "Default topic resources are not allowed."),
        (ErrorCode.invalid_topic_exception, "Topic name \"a/b\" is illegal, it contains a character other than "
                                            "ASCII alphanumerics, '.', '_' and '-'"),
        (ErrorCode.broker_id_not_registered, "No node with id 7 found."),
        (ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number."),
        (ErrorCode.invalid_request, "Invalid negative broker ID."),
        (ErrorCode.none, None)]
    # the one that passed is written alone
    assert result.records == [config(TOPIC, "foo", "retention.ms", "1")]


def test_a_controller_id_is_a_node_with_configs():
    ctx = context(cluster(elr=False), config=ControllerConfig(node_id=3000))
    result = incremental_alter_configs(ctx, incremental((BROKER, "3000", [("background.threads", SET, "4")])))
    assert errors(result)[0][2] == ErrorCode.none


def test_broker_dynamic_configs_are_typed_unknown_broker_names_pass():
    result = incremental_alter_configs(context(cluster(elr=False)), incremental(
        (BROKER, "", [("num.io.threads", SET, "0")]),
        (BROKER, "1", [("my.plugin.setting", SET, "anything")])))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.invalid_config, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        (ErrorCode.none, None)]


def test_validate_only_writes_nothing():
    result = incremental_alter_configs(context(cluster()), incremental(
        (TOPIC, "foo", [("retention.ms", SET, "1")]), validate_only=True))
    assert result.records == [] and errors(result)[0][2] == ErrorCode.none


def test_duplicates_unknown_types_and_loggers():
    result = incremental_alter_configs(context(cluster()), incremental(
        (TOPIC, "foo", [("retention.ms", SET, "1")]),
        (TOPIC, "foo", [("retention.ms", SET, "2")]),
        (TOPIC, "foo", [("retention.ms", SET, "3")]),
        (99, "x", []),
        (8, "1", [("kafka", SET, "DEBUG")])))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.invalid_request, "Duplicate resource."),
        (ErrorCode.unsupported_version, "Unknown resource type 99."),
        (ErrorCode.invalid_request, "Unknown resource type BROKER_LOGGER")]
    assert result.records == []


def test_unknown_operation_and_oversized_values():
    result = incremental_alter_configs(context(cluster()), incremental(
        (TOPIC, "foo", [("retention.ms", 7, "1")]),
        (BROKER, "", [("my.plugin.setting", SET, "x" * 32768)])))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.invalid_request, "Unknown config operation 7."),
        (ErrorCode.invalid_config, "The configuration value cannot be added because it exceeds the maximum "
                                   "value size of 32767 bytes.")]


def test_alter_resource_for_a_new_topic_skips_the_existence_check():
    records, error = alter_resource(context(cluster()), TOPIC, "new", {"retention.ms": (SET, "5")}, newly_created=True)
    assert error is None and records == [config(TOPIC, "new", "retention.ms", "5")]


# -- KIP-966: min.insync.replicas while ELR is on -------------------------------------------

def test_elr_is_on_by_feature_and_metadata_version():
    assert elr_enabled(cluster("4.1-IV1"))
    assert not elr_enabled(cluster("4.1-IV1", elr=False))
    assert not elr_enabled(cluster("4.0-IV3"))


def test_while_elr_is_on_broker_min_isr_is_refused_and_cluster_min_isr_stays():
    image = cluster(configs={(BROKER, ""): {"min.insync.replicas": "1"}})
    result = incremental_alter_configs(context(image), incremental(
        (BROKER, "1", [("min.insync.replicas", SET, "2")]),
        (BROKER, "2", [("min.insync.replicas", DELETE, None)]),
        (BROKER, "", [("min.insync.replicas", DELETE, None)])))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.invalid_config, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."),
        (ErrorCode.invalid_config, "Broker-level min.insync.replicas cannot be altered while ELR is enabled."),
        (ErrorCode.invalid_config, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")]
    assert result.records == []
    # AlterConfigs' implicit deletion counts too
    legacy_result = alter_configs(context(image), legacy((BROKER, "", {"background.threads": "4"})))
    assert errors(legacy_result)[0][3] == "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."


def test_topic_min_isr_change_clears_that_topics_elr():
    image = cluster(topics=("foo", "bar"), elr_of_foo=(2,))
    assert image.topics.topic("foo").partitions[0].elr == (2,)
    result = incremental_alter_configs(context(image), incremental((TOPIC, "foo", [("min.insync.replicas", SET, "2")])))
    assert result.records == [config(TOPIC, "foo", "min.insync.replicas", "2"), m.ClearElrRecordV0(topic_name="foo")]
    image = replayed(image, result)
    assert image.topics.topic("foo").partitions[0].elr == () and image.configs[(TOPIC, "foo")] == {
        "min.insync.replicas": "2"}


def test_cluster_min_isr_change_clears_every_elr():
    image = cluster(elr_of_foo=(2,), configs={(BROKER, ""): {"min.insync.replicas": "1"}})
    result = incremental_alter_configs(context(image), incremental((BROKER, "", [("min.insync.replicas", SET, "1")])))
    assert result.records == [config(BROKER, "", "min.insync.replicas", "1"), m.ClearElrRecordV0(topic_name="")]
    assert replayed(image, result).topics.topic("foo").partitions[0].elr == ()


def test_without_elr_min_isr_is_free_and_clears_nothing():
    image = cluster("4.0-IV3")
    result = incremental_alter_configs(context(image), incremental(
        (BROKER, "1", [("min.insync.replicas", SET, "2")]), (TOPIC, "foo", [("min.insync.replicas", SET, "2")])))
    assert [e[2] for e in errors(result)] == [ErrorCode.none, ErrorCode.none]
    assert not any(isinstance(r, m.ClearElrRecordV0) for r in result.records)
    assert clear_elr_records(image, result.records) == []


def test_elr_safety_records():
    image = cluster("4.0-IV3", configs={(BROKER, "2"): {"min.insync.replicas": "2", "background.threads": "3"},
                                       (BROKER, "1"): {"min.insync.replicas": "3"}})
    assert elr_safety_records(image, ControllerConfig(min_insync_replicas=2)) == [
        config(BROKER, "", "min.insync.replicas", "2"),
        config(BROKER, "1", "min.insync.replicas", None), config(BROKER, "2", "min.insync.replicas", None)]
    kept = cluster("4.0-IV3", configs={(BROKER, ""): {"min.insync.replicas": "3"}})
    assert elr_safety_records(kept, ControllerConfig(min_insync_replicas=2)) == []


# -- AlterConfigs (legacy) -----------------------------------------------------------------

def test_alter_configs_replaces_the_whole_set():
    image = cluster(configs={(TOPIC, "foo"): {"retention.ms": "1", "segment.ms": "100"}})
    result = alter_configs(context(image), legacy((TOPIC, "foo", {"retention.ms": "2", "cleanup.policy": "compact"})))
    assert errors(result) == [(TOPIC, "foo", ErrorCode.none, None)]
    assert result.records == [config(TOPIC, "foo", "retention.ms", "2"), config(TOPIC, "foo", "cleanup.policy", "compact"),
                               config(TOPIC, "foo", "segment.ms", None)]
    image = replayed(image, result)
    assert image.configs[(TOPIC, "foo")] == {"retention.ms": "2", "cleanup.policy": "compact"}


def test_alter_configs_validates_as_incremental():
    result = alter_configs(context(cluster()), legacy((TOPIC, "foo", {"nope": "1"}), (TOPIC, "bar", {}),
                                                      validate_only=True))
    assert [e[2:] for e in errors(result)] == [
        (ErrorCode.invalid_config, "Unknown topic config name: nope"),
        (ErrorCode.unknown_topic_or_partition, "The topic 'bar' does not exist.")]


def test_error_responses_name_every_resource():
    command = next(c for c in COMMANDS if c.api_key == 44)
    response = command.error_response(incremental((TOPIC, "foo", []), (BROKER, "", [])), ErrorCode.not_controller, None)
    assert [(r.resource_name, r.error_code) for r in response.responses] == [
        ("foo", ErrorCode.not_controller), ("", ErrorCode.not_controller)]


# -- DescribeConfigs -----------------------------------------------------------------------

def describe(image: Any, *resources: tuple[int, str, tuple | None], synonyms: bool = True,
             config_: ControllerConfig | None = None) -> Any:
    req = request("describe_configs", 4, include_synonyms=synonyms, include_documentation=True, resources=tuple(
        _desc.DescribeConfigsResource(resource_type=i8(t), resource_name=n, configuration_keys=keys)
        for t, n, keys in resources))
    result = describe_configs(context(image, config=config_), req)
    assert result.records == []
    return result.response.results


def entries(result: Any) -> dict[str, tuple]:
    return {e.name: (e.value, e.config_source, [(s.name, s.value, s.source) for s in e.synonyms])
            for e in result.configs}


def test_describe_topic_defaults_with_kafkas_synonyms():
    (result,) = describe(cluster(), (TOPIC, "foo", None))
    assert result.error_code == ErrorCode.none
    got = entries(result)
    assert sorted(got) == sorted(k for k, v in defs.TOPIC_CONFIGS.items() if not v.internal)
    assert got["retention.ms"] == ("604800000", defs.DEFAULT_CONFIG, [("log.retention.hours", "168", 5)])
    assert got["cleanup.policy"] == ("delete", defs.DEFAULT_CONFIG, [("log.cleanup.policy", "delete", 5)])
    assert got["leader.replication.throttled.replicas"] == ("", defs.DEFAULT_CONFIG, [])
    assert got["flush.ms"] == ("9223372036854775807", defs.DEFAULT_CONFIG,
                               [("log.flush.scheduler.interval.ms", "9223372036854775807", 5)])
    entry = next(e for e in result.configs if e.name == "min.cleanable.dirty.ratio")
    assert (entry.config_type, entry.read_only, entry.is_sensitive, entry.documentation) == (6, False, False, None)


def test_describe_topic_override_cluster_default_and_static():
    image = cluster(configs={(TOPIC, "foo"): {"cleanup.policy": "compact, delete"},
                             (BROKER, ""): {"log.retention.hours": "2", "min.insync.replicas": "2"},
                             (BROKER, "0"): {"log.segment.bytes": "2000000"}})
    (result,) = describe(image, (TOPIC, "foo", ("cleanup.policy", "retention.ms", "min.insync.replicas",
                                                 "segment.bytes", "unclean.leader.election.enable", "nope")),
                         config_=ControllerConfig(unclean_leader_election_enable=True))
    assert entries(result) == {
        "cleanup.policy": ("compact,delete", defs.TOPIC_CONFIG, [
            ("cleanup.policy", "compact,delete", 1), ("log.cleanup.policy", "delete", 5)]),
        "retention.ms": ("7200000", defs.DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("log.retention.hours", "2", 3), ("log.retention.hours", "168", 5)]),
        "min.insync.replicas": ("2", defs.DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("min.insync.replicas", "2", 3), ("min.insync.replicas", "1", 5)]),
        "segment.bytes": ("2000000", defs.DYNAMIC_BROKER_CONFIG, [
            ("log.segment.bytes", "2000000", 2), ("log.segment.bytes", "1073741824", 5)]),
        "unclean.leader.election.enable": ("true", defs.STATIC_BROKER_CONFIG, [
            ("unclean.leader.election.enable", "true", 4), ("unclean.leader.election.enable", "false", 5)]),
    }
    (plain,) = describe(image, (TOPIC, "foo", ("retention.ms",)), synonyms=False)
    assert entries(plain) == {"retention.ms": ("7200000", defs.DYNAMIC_DEFAULT_BROKER_CONFIG, [])}


def test_describe_errors():
    results = describe(cluster(), (TOPIC, "bar", None), (TOPIC, "", None), (BROKER, "x", None), (8, "1", None))
    assert [(r.error_code, r.error_message, r.configs) for r in results] == [
        (ErrorCode.unknown_topic_or_partition, "The topic 'bar' does not exist.", ()),
        (ErrorCode.invalid_topic_exception, "Topic name is illegal, it can't be empty", ()),
        (ErrorCode.invalid_request, "Unable to parse broker name as a base 10 number.", ()),
        (ErrorCode.invalid_request, "Unsupported resource type: BROKER_LOGGER", ())]


def test_describe_broker_and_cluster_default():
    image = cluster(elr=False, configs={(BROKER, ""): {"background.threads": "4", "ssl.key.password": "s"},
                                        (BROKER, "1"): {"background.threads": "5", "my.plugin": "p"}})
    cluster_default, broker = describe(image, (BROKER, "", None), (BROKER, "1", None))
    assert entries(cluster_default) == {
        "background.threads": ("4", 3, [("background.threads", "4", 3), ("background.threads", "10", 5)]),
        "ssl.key.password": (None, 3, [("ssl.key.password", None, 3)])}
    assert entries(broker) == {
        "background.threads": ("5", 2, [("background.threads", "5", 2), ("background.threads", "4", 3),
                                        ("background.threads", "10", 5)]),
        "my.plugin": (None, 2, [("my.plugin", None, 2)]),
        "ssl.key.password": (None, 3, [("ssl.key.password", None, 3)])}
    plugin = next(e for e in broker.configs if e.name == "my.plugin")
    assert plugin.is_sensitive and plugin.read_only and plugin.config_type == 0


# -- config_defs facts -----------------------------------------------------------------------

def test_java_double_and_canonical_forms():
    assert [defs.java_double(v) for v in (1.7976931348623157e308, 1e7, 1e-5, 0.5, 123.0)] == [
        "1.7976931348623157E308", "1.0E7", "1.0E-5", "0.5", "123.0"]
    assert defs.canonical(defs.TOPIC_CONFIGS["preallocate"], " TRUE ") == "true"
    assert defs.canonical(defs.TOPIC_CONFIGS["min.cleanable.dirty.ratio"], "1e-1") == "0.1"
    assert defs.split_list(" a , b,,") == ["a", "b"]


def test_every_synonym_and_dynamic_config_is_typed():
    assert len(defs.BROKER_DYNAMIC_CONFIGS) == 90  # DynamicBrokerConfig.AllDynamicConfigs in Kafka 4.1.2
    for topic_name, synonyms in defs.TOPIC_SYNONYMS.items():
        assert topic_name in defs.TOPIC_CONFIGS
        for server_name, _ in synonyms:
            assert server_name in defs.BROKER_DYNAMIC_CONFIGS or server_name in defs.SERVER_TYPES \
                or server_name == "log.flush.scheduler.interval.ms"
