"""Voter sets (KIP-853), their history, and the quorum settings under Kafka's names."""

from __future__ import annotations

import uuid

import pytest

from engine.common.errors import ConfigError
from engine.records.kio_codec import VotersRecord, encode_entity
from engine.records.bounds_check import decode_entity
from engine.raft.raft_config import RaftConfig
from engine.raft.voter_set import (
    ReplicaKey, VoterNode, VoterSet, VoterSetHistory, parse_bootstrap_servers, parse_quorum_voters,
)

DIR_A, DIR_B, DIR_C = uuid.UUID(int=0xA), uuid.UUID(int=0xB), uuid.UUID(int=0xC)


def node(node_id: int, directory: uuid.UUID | None = None, *, port: int = 9093, extra: bool = False) -> VoterNode:
    endpoints = (("CONTROLLER", (f"node{node_id}", port)),)
    if extra:
        endpoints += (("REPLICATION", ("::1", port + 1)),)
    return VoterNode(ReplicaKey(node_id, directory), endpoints)


def voters(*ids: int, directories: bool = False) -> VoterSet:
    return VoterSet.of(node(i, uuid.UUID(int=i) if directories else None) for i in ids)


# -- ReplicaKey / VoterSet ----------------------------------------------------------------


@pytest.mark.parametrize("size, majority", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3)])
def test_majority_size(size: int, majority: int) -> None:
    assert voters(*range(1, size + 1)).majority_size == majority


def test_voter_set_is_sorted_by_node_id_and_refuses_duplicates() -> None:
    vs = VoterSet.of([node(3), node(1), node(2)])
    assert vs.ids == (1, 2, 3)
    assert vs.keys == (ReplicaKey(1), ReplicaKey(2), ReplicaKey(3))
    with pytest.raises(ValueError, match="twice"):
        VoterSet.of([node(1), node(1, DIR_A)])


def test_replica_key_str_and_order() -> None:
    assert str(ReplicaKey(4)) == "4"
    assert str(ReplicaKey(4, uuid.UUID(int=1))) == "4/AAAAAAAAAAAAAAAAAAAAAQ"
    assert sorted([ReplicaKey(2), ReplicaKey(1, DIR_A)])[0].node_id == 1


def test_is_voter_without_directory_ids_matches_on_node_id() -> None:
    vs = voters(1, 2, 3)
    assert vs.is_voter(ReplicaKey(2))
    assert vs.is_voter(ReplicaKey(2, DIR_A))  # a static voter: any directory (Kafka: ids match)
    assert not vs.is_voter(ReplicaKey(4))
    assert not vs.is_voter(ReplicaKey(4, DIR_A))


def test_is_voter_with_directory_ids_needs_the_same_directory() -> None:
    vs = VoterSet.of([node(1, DIR_A), node(2, DIR_B)])
    assert vs.is_voter(ReplicaKey(1, DIR_A))
    assert not vs.is_voter(ReplicaKey(1, DIR_B))  # the same id on another disk
    assert not vs.is_voter(ReplicaKey(3, DIR_C))


def test_is_voter_key_without_directory_against_voter_with_one() -> None:
    vs = VoterSet.of([node(1, DIR_A), node(2, DIR_B)])
    assert not vs.is_voter(ReplicaKey(1))


def test_is_only_voter() -> None:
    assert voters(1).is_only_voter(ReplicaKey(1))
    assert not voters(1).is_only_voter(ReplicaKey(2))
    assert not voters(1, 2).is_only_voter(ReplicaKey(1))
    assert not VoterSet.of([node(1, DIR_A)]).is_only_voter(ReplicaKey(1, DIR_B))


def test_with_and_without_voter() -> None:
    vs = voters(1, 3)
    bigger = vs.with_voter(node(2, DIR_B))
    assert bigger.ids == (1, 2, 3)
    assert vs.ids == (1, 3)  # immutable
    with pytest.raises(ValueError, match="already a voter"):
        bigger.with_voter(node(2, DIR_C))
    assert bigger.without_voter(ReplicaKey(2, DIR_B)).ids == (1, 3)
    with pytest.raises(ValueError, match="not a voter"):
        bigger.without_voter(ReplicaKey(2, DIR_C))
    with pytest.raises(ValueError, match="not a voter"):
        bigger.without_voter(ReplicaKey(9))


def test_with_endpoints_changes_one_voter() -> None:
    vs = VoterSet.of([node(1, DIR_A), node(2, DIR_B)])
    updated = vs.with_endpoints(ReplicaKey(2, DIR_B), (("CONTROLLER", ("new", 1)),), 1, 1)
    assert updated.node(2).endpoints == (("CONTROLLER", ("new", 1)),)
    assert (updated.node(2).min_kraft_version, updated.node(2).max_kraft_version) == (1, 1)
    assert updated.node(1) == vs.node(1)
    assert updated.node(2).endpoint("CONTROLLER") == ("new", 1)
    assert updated.node(2).endpoint("OTHER") is None


def test_overlapping_majority_one_voter_added_or_removed() -> None:
    base = voters(1, 2, 3, directories=True)
    plus = base.with_voter(node(4, uuid.UUID(int=4)))
    minus = base.without_voter(ReplicaKey(1, uuid.UUID(int=1)))
    for other in (base, plus, minus):
        assert base.has_overlapping_majority(other) and other.has_overlapping_majority(base)
    two_more = plus.with_voter(node(5, uuid.UUID(int=5)))
    two_less = minus.without_voter(ReplicaKey(2, uuid.UUID(int=2)))
    for other in (two_more, two_less):
        assert not base.has_overlapping_majority(other) and not other.has_overlapping_majority(base)


def test_overlapping_majority_rejects_two_replacements() -> None:
    base = voters(1, 2, 3, 4, 5, directories=True)
    replaced = (base.without_voter(ReplicaKey(1, uuid.UUID(int=1))).with_voter(node(1, DIR_A))
                .without_voter(ReplicaKey(2, uuid.UUID(int=2))).with_voter(node(2, DIR_B)))
    assert not base.has_overlapping_majority(replaced)


# -- the VotersRecord form ----------------------------------------------------------------------


def _mixed_set() -> VoterSet:
    return VoterSet.of([
        VoterNode(ReplicaKey(2, DIR_B), (("CONTROLLER", ("node2", 9093)), ("REPLICATION", ("::1", 9094))), 0, 1),
        VoterNode(ReplicaKey(1, None), (("CONTROLLER", ("node1", 65535)),), 1, 1),
    ])


def test_voters_record_round_trip() -> None:
    vs = _mixed_set()
    record = vs.to_voters_record()
    assert [int(v.voter_id) for v in record.voters] == [1, 2]
    assert [e.name for e in record.voters[1].endpoints] == ["CONTROLLER", "REPLICATION"]  # listener order kept
    assert VoterSet.from_voters_record(record) == vs


def test_voters_record_round_trip_through_bytes() -> None:
    vs = _mixed_set()
    data = encode_entity(vs.to_voters_record())
    decoded, used = decode_entity(VotersRecord, data)
    assert used == len(data)
    back = VoterSet.from_voters_record(decoded)
    assert back == vs
    assert back.node(1).key.directory_id is None  # ZERO_UUID on the wire, no directory here
    assert back.node(2).endpoint("REPLICATION") == ("::1", 9094)


# -- VoterSetHistory --------------------------------------------------------------------------


def test_history_value_at_and_latest() -> None:
    static = voters(1, 2, 3)
    history = VoterSetHistory(static)
    assert history.latest() == static and history.latest_offset() == -1
    a, b = voters(1, 2, 3, 4, directories=True), voters(1, 2, 4, directories=True)
    history.add(5, a)
    history.add(10, b)
    assert history.value_at(0) == static
    assert history.value_at(4) == static
    assert history.value_at(5) == a
    assert history.value_at(9) == a
    assert history.value_at(10) == b
    assert history.value_at(1_000) == b
    assert history.latest() == b and history.latest_offset() == 10


def test_history_add_must_go_forward() -> None:
    history = VoterSetHistory(VoterSet())
    history.add(5, voters(1))
    with pytest.raises(ValueError):
        history.add(5, voters(1, 2))
    with pytest.raises(ValueError):
        history.add(3, voters(1, 2))
    assert history.offsets == [5]


def test_history_truncate_from_drops_sets_at_or_after_the_new_end() -> None:
    static = voters(1)
    history = VoterSetHistory(static)
    a, b = voters(1, 2), voters(1, 2, 3)
    history.add(5, a)
    history.add(10, b)
    history.truncate_from(11)  # the log now ends at 11: offset 10 survives
    assert history.latest() == b
    history.truncate_from(10)  # offset 10 is gone
    assert history.latest() == a and history.latest_offset() == 5
    history.add(7, b)  # a new record may be written after the cut
    assert history.value_at(6) == a and history.value_at(7) == b
    history.truncate_from(0)
    assert history.latest() == static
    history.add(1, a)
    history.clear()
    assert history.latest() == static


# -- parsing controller.quorum.voters / bootstrap.servers -------------------------------------


def test_parse_quorum_voters() -> None:
    vs = parse_quorum_voters(" 3@c:9095, 1@a.example:9093,2@[::1]:9094 ,", "CTRL")
    assert vs.ids == (1, 2, 3)
    assert all(n.key.directory_id is None for n in vs.voters)
    assert vs.node(1).endpoints == (("CTRL", ("a.example", 9093)),)
    assert vs.node(2).endpoint("CTRL") == ("::1", 9094)
    assert vs.node(3).endpoint("CTRL") == ("c", 9095)
    assert parse_quorum_voters("", "CTRL") == VoterSet()


@pytest.mark.parametrize("text", ["1@host", "x@h:1", "1@:9093", "1@h:abc", "1h:9093", "-1@h:1", "1@[::1]"])
def test_parse_quorum_voters_bad_entry(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_quorum_voters(f"2@ok:1,{text}", "CONTROLLER")
    message = str(e.value)
    assert "\n" not in message
    assert "controller.quorum.voters" in message and repr(text) in message


def test_parse_quorum_voters_duplicate_id() -> None:
    with pytest.raises(ConfigError, match="controller.quorum.voters") as e:
        parse_quorum_voters("1@a:1,1@b:2", "CONTROLLER")
    assert "\n" not in str(e.value)


def test_parse_quorum_voters_port_out_of_range() -> None:
    with pytest.raises(ConfigError):
        parse_quorum_voters("1@h:99999", "CONTROLLER")


def test_parse_bootstrap_servers() -> None:
    assert parse_bootstrap_servers("a:1, [::1]:9093 ,b.example:2,") == (("a", 1), ("::1", 9093), ("b.example", 2))
    assert parse_bootstrap_servers("") == ()


@pytest.mark.parametrize("text", ["host", ":9093", "h:port", "h:"])
def test_parse_bootstrap_servers_bad_entry(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_bootstrap_servers(f"ok:1,{text}")
    assert "controller.quorum.bootstrap.servers" in str(e.value) and repr(text) in str(e.value)
    assert "\n" not in str(e.value)


# -- RaftConfig.from_properties ---------------------------------------------------------------


def test_config_kafka_defaults() -> None:
    config = RaftConfig.from_properties({})
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.election_backoff_max_ms,
            config.append_linger_ms, config.request_timeout_ms, config.retry_backoff_ms) == (1000, 2000, 1000, 25,
                                                                                              2000, 20)
    assert config.auto_join_enable is False
    assert config.static_voters == VoterSet() and config.bootstrap_servers == ()
    assert config.listener_name == "CONTROLLER"
    assert RaftConfig() == config  # the dataclass defaults are Kafka's too


def test_config_overrides() -> None:
    config = RaftConfig.from_properties({
        "controller.quorum.election.timeout.ms": "150", "controller.quorum.fetch.timeout.ms": " 300 ",
        "controller.quorum.election.backoff.max.ms": "70", "controller.quorum.append.linger.ms": "0",
        "controller.quorum.request.timeout.ms": "900", "controller.quorum.retry.backoff.ms": "5",
        "controller.quorum.auto.join.enable": " TRUE ", "controller.listener.names": " CTRL ,OTHER",
        "controller.quorum.voters": "1@a:9093,2@b:9094", "controller.quorum.bootstrap.servers": "x:1",
    })
    assert (config.election_timeout_ms, config.fetch_timeout_ms, config.election_backoff_max_ms,
            config.append_linger_ms, config.request_timeout_ms, config.retry_backoff_ms) == (150, 300, 70, 0, 900, 5)
    assert config.auto_join_enable is True
    assert config.listener_name == "CTRL"
    assert config.static_voters.node(2).endpoint("CTRL") == ("b", 9094)
    assert config.bootstrap_servers == (("x", 1),)
    assert RaftConfig.from_properties({"controller.quorum.auto.join.enable": "false"}).auto_join_enable is False


def test_config_bootstrap_falls_back_to_the_voters() -> None:
    config = RaftConfig.from_properties({"controller.quorum.voters": "2@b:9094,1@a:9093"})
    assert config.bootstrap_servers == (("a", 9093), ("b", 9094))


@pytest.mark.parametrize("key", [
    "controller.quorum.election.timeout.ms", "controller.quorum.fetch.timeout.ms",
    "controller.quorum.election.backoff.max.ms", "controller.quorum.append.linger.ms",
    "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
])
@pytest.mark.parametrize("value", ["abc", "1.5", "", "-1"])
def test_config_bad_int_names_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError) as e:
        RaftConfig.from_properties({key: value}, where="server.properties")
    message = str(e.value)
    assert key in message and "server.properties" in message and "\n" not in message


@pytest.mark.parametrize("value", ["yes", "1", ""])
def test_config_bad_auto_join(value: str) -> None:
    with pytest.raises(ConfigError) as e:
        RaftConfig.from_properties({"controller.quorum.auto.join.enable": value}, where="server.properties")
    assert "controller.quorum.auto.join.enable" in str(e.value) and "server.properties" in str(e.value)


def test_config_bad_voters_names_the_file() -> None:
    with pytest.raises(ConfigError) as e:
        RaftConfig.from_properties({"controller.quorum.voters": "1@a"}, where="server.properties")
    assert e.value.path == "server.properties"
    assert "controller.quorum.voters" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError) as e:
        RaftConfig.from_properties({"controller.quorum.bootstrap.servers": "a"}, where="s.properties")
    assert e.value.path == "s.properties" and "controller.quorum.bootstrap.servers" in str(e.value)
