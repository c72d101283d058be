"""``kraftd quorum describe | add-controller | remove-controller`` against Kafka's MetadataQuorumCommand.

The network is a fake in-process responder (``FakeQuorum``) answering with real kio response
objects, put in place through ``engine.admin.quorum_client.transport``: these tests check what is sent and
what is printed. The expected texts are written out by hand from Kafka's source
(MetadataQuorumCommand, ToolsUtils.prettyPrintTable) and its tests (MetadataQuorumCommandTest,
MetadataQuorumCommandUnitTest, MetadataQuorumCommandErrorTest).
"""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from engine.admin import quorum_client as qt
from engine.tools.cli import run
from engine.common.kafka_uuid import kafka_to_uuid
from engine.records.kio_codec import ErrorCode, encode_entity, protocol_module
from engine.storage.meta_properties import MetaProperties, write_meta_properties

DQ = protocol_module("describe_quorum", 2, "response")
DC = protocol_module("describe_cluster", 2, "response")
ADD = protocol_module("add_raft_voter", 1, "response")
RM = protocol_module("remove_raft_voter", 0, "response")

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
DIR = {n: kafka_to_uuid(s) for n, s in {1: "wZoXPqWoSu6F6c8MkmdyAg", 2: "_KWDkTahTVaiVVVTaugNew",
                                         3: "Ig-WB32JRqqzct3VafTr0w", 4: "QJ3rW5IxTeCBkbGDQ_Ztnw"}.items()}
C1, C2, C3 = ("localhost", 9093), ("localhost", 9095), ("localhost", 9097)  # CONTROLLER of nodes 1, 2, 3
SSL1, SSL2 = ("::1", 9094), ("::1", 9096)  # the SSL listeners of nodes 1 and 2
NODE_ID = {C1: 1, C2: 2, C3: 3, SSL2: 2}
T = 1_730_000_000_000  # a wall-clock time in ms


# ---------------------------------------------------------------------------------------------
# kio answers, built by hand


def replica(node_id, leo, fetch=-1, caught_up=-1, directory=True):
    return DQ.ReplicaState(replica_id=node_id, replica_directory_id=DIR.get(node_id) if directory else None,
                           log_end_offset=leo, last_fetch_timestamp=fetch, last_caught_up_timestamp=caught_up)


NODES = (
    DQ.Node(node_id=1, listeners=(DQ.Listener(name="CONTROLLER", host="localhost", port=9093),
                                  DQ.Listener(name="SSL", host="::1", port=9094))),
    DQ.Node(node_id=2, listeners=(DQ.Listener(name="SSL", host="::1", port=9096),
                                  DQ.Listener(name="CONTROLLER", host="localhost", port=9095))),
    DQ.Node(node_id=3, listeners=(DQ.Listener(name="CONTROLLER", host="localhost", port=9097),)),
)
VOTERS = (replica(1, 120, T + 500, T + 500), replica(2, 110, T + 400, T - 1000), replica(3, 100, T + 450, T - 1500))
OBSERVERS = (replica(4, 90, T + 300, T - 2000), replica(5, 120, -1, -1, directory=False))


def quorum_answer(*, error=ErrorCode.none, leader_id=1, voters=VOTERS, observers=OBSERVERS, nodes=NODES,
                  message=None):
    partition = DQ.PartitionData(partition_index=0, error_code=error, error_message=message,
                                 leader_id=leader_id, leader_epoch=7, high_watermark=118,
                                 current_voters=voters if error == ErrorCode.none else (),
                                 observers=observers if error == ErrorCode.none else ())
    return DQ.DescribeQuorumResponse(error_code=ErrorCode.none, error_message=None, nodes=nodes,
                                     topics=(DQ.TopicData(topic_name="__cluster_metadata", partitions=(partition,)),))


def cluster_answer(controller_id=1, brokers=()):
    return DC.DescribeClusterResponse(throttle_time=timedelta(0), error_code=ErrorCode.none, endpoint_type=2,
                                      cluster_id=CLUSTER_ID, controller_id=controller_id, brokers=brokers)


class FakeQuorum:
    """Controllers at fixed addresses: ``leader`` answers DescribeQuorum, the others redirect."""

    def __init__(self, leader=C1, *, down=(), redirect_nodes=NODES, cluster=True, answers=None):
        self.leader, self.down, self.redirect_nodes, self.cluster = leader, set(down), redirect_nodes, cluster
        self.answers = answers or {}  # request class name -> response
        self.calls: list[tuple[tuple[str, int], object]] = []

    def __call__(self, address, request):
        self.calls.append((address, request))
        name = type(request).__name__
        if address in self.down:
            raise ConnectionRefusedError(111, "Connection refused")
        if name in self.answers:
            return self.answers[name]
        if name == "DescribeQuorumRequest":
            if address == self.leader:
                return quorum_answer()
            return quorum_answer(error=ErrorCode.not_leader_or_follower, leader_id=NODE_ID.get(self.leader, -1),
                                 nodes=self.redirect_nodes)
        if name == "DescribeClusterRequest" and self.cluster:
            return cluster_answer()
        raise ConnectionResetError(104, "Connection reset by peer")

    def sent(self, name):
        return [(a, r) for a, r in self.calls if type(r).__name__ == name]


@pytest.fixture
def fake(monkeypatch):
    quorum = FakeQuorum()
    monkeypatch.setattr(qt, "transport", quorum)
    monkeypatch.setattr(qt, "clock_ms", lambda: T + 1000)
    return quorum


def kraftd(capsys, *args):
    """Run ``kraftd`` in-process: (exit code, stdout lines, stderr lines)."""
    errors: list[str] = []
    code = run([str(a) for a in args], err=errors.append)
    return code, capsys.readouterr().out.splitlines(), errors


# ---------------------------------------------------------------------------------------------
# describe --status


STATUS = [
    "ClusterId:              MkU3OEVBNTcwNTJENDM2Qg",
    "LeaderId:               1",
    "LeaderEpoch:            7",
    "HighWatermark:          118",
    "MaxFollowerLag:         20",
    "MaxFollowerLagTimeMs:   2000",
    'CurrentVoters:          [{"id": 1, "directoryId": "wZoXPqWoSu6F6c8MkmdyAg", "endpoints": '
    '["CONTROLLER://localhost:9093", "SSL://[::1]:9094"]}, '
    '{"id": 2, "directoryId": "_KWDkTahTVaiVVVTaugNew", "endpoints": '
    '["SSL://[::1]:9096", "CONTROLLER://localhost:9095"]}, '
    '{"id": 3, "directoryId": "Ig-WB32JRqqzct3VafTr0w", "endpoints": ["CONTROLLER://localhost:9097"]}]',
    'CurrentObservers:       [{"id": 4, "directoryId": "QJ3rW5IxTeCBkbGDQ_Ztnw"}, {"id": 5, "directoryId": null}]',
]


def test_status_is_kafkas_text(fake, capsys):
    code, out, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status")
    assert (code, err) == (0, [])
    assert out == STATUS
    # the patterns of MetadataQuorumCommandTest.testDescribeQuorumStatusSuccessful
    assert re.fullmatch(r"ClusterId:\s+\S{22}", out[0])
    assert re.fullmatch(r'CurrentVoters:\s+\[\{"id":\s+\d+,\s+"directoryId":\s+\S+,\s+'
                        r'"endpoints":\s+\["\S+://\[?\S+]?:\d+",?.*]', out[6])
    assert re.fullmatch(r'CurrentObservers:\s+\[\{"id":\s+\d+,\s+"directoryId":\s+\S+}'
                        r'(,\s+\{"id":\s+\d+,\s+"directoryId":\s+\S+})*]', out[7])
    (address, request), = fake.sent("DescribeClusterRequest")
    assert address == C1 and request.endpoint_type == 2  # controllers, asked of the node that answered
    (_, dq), = fake.sent("DescribeQuorumRequest")
    assert dq.topics[0].topic_name == "__cluster_metadata" and dq.topics[0].partitions[0].partition_index == 0
    assert type(dq).__version__ == 2


def test_status_lag_rules():
    one = qt.QuorumInfo(3, 1, 10, (replica(3, 10, -1, T),))
    assert qt.format_status(one, "x")[4:8] == [  # testOnlyOneBrokerAndOneController
        "MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   0", 'CurrentVoters:          [{"id": 3, '
        '"directoryId": "Ig-WB32JRqqzct3VafTr0w"}]', "CurrentObservers:       []"]
    # a follower level with the leader but listed first is "the" max-lag follower: lag 0, time differs
    tie = qt.QuorumInfo(1, 1, 10, (replica(2, 10, T, T - 30), replica(1, 10, T, T)))
    assert qt.format_status(tie, "x")[4:6] == ["MaxFollowerLag:         0", "MaxFollowerLagTimeMs:   30"]
    unknown = qt.QuorumInfo(1, 1, 10, (replica(1, 10, T, T), replica(2, 4, -1, -1)))
    assert qt.format_status(unknown, "x")[4:6] == ["MaxFollowerLag:         6", "MaxFollowerLagTimeMs:   -1"]
    with pytest.raises(qt.QuorumToolError, match="leader 9 is not among"):
        qt.format_status(qt.QuorumInfo(9, 1, 10, (replica(1, 10),)), "x")


def test_status_with_no_cluster_id_answer(fake, capsys):
    fake.cluster = False
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status")
    assert code == 0 and out[0] == "ClusterId:              " and out[1:] == STATUS[1:]
    assert [r.endpoint_type for _, r in fake.sent("DescribeClusterRequest")] == [2, 1]


# ---------------------------------------------------------------------------------------------
# describe --replication


REPLICATION = [
    "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t",
    "1     \twZoXPqWoSu6F6c8MkmdyAg\t120         \t0  \t1730000000500     \t1730000000500        \tLeader  \t",
    "2     \t_KWDkTahTVaiVVVTaugNew\t110         \t10 \t1730000000400     \t1729999999000        \tFollower\t",
    "3     \tIg-WB32JRqqzct3VafTr0w\t100         \t20 \t1730000000450     \t1729999998500        \tFollower\t",
    "4     \tQJ3rW5IxTeCBkbGDQ_Ztnw\t90          \t30 \t1730000000300     \t1729999998000        \tObserver\t",
    "5     \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t0  \t-1                \t-1                   \tObserver\t",
]

HUMAN = [
    "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t",
    "1     \twZoXPqWoSu6F6c8MkmdyAg\t120         \t0  \t500 ms ago        \t500 ms ago           \tLeader  \t",
    "2     \t_KWDkTahTVaiVVVTaugNew\t110         \t10 \t600 ms ago        \t2000 ms ago          \tFollower\t",
    "3     \tIg-WB32JRqqzct3VafTr0w\t100         \t20 \t550 ms ago        \t2500 ms ago          \tFollower\t",
    "4     \tQJ3rW5IxTeCBkbGDQ_Ztnw\t90          \t30 \t700 ms ago        \t3000 ms ago          \tObserver\t",
    "5     \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t0  \t-1                \t-1                   \tObserver\t",
]


def test_replication_is_kafkas_table(fake, capsys):
    code, out, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "describe", "--replication")
    assert (code, err, out) == (0, [], REPLICATION)
    assert re.fullmatch(r"NodeId\s+DirectoryId\s+LogEndOffset\s+Lag\s+LastFetchTimestamp\s+"
                        r"LastCaughtUpTimestamp\s+Status\s+", out[0])
    assert re.match(r"\d+\s+\S+\s+\d+\s+\d+\s+-?\d+\s+-?\d+\s+Leader\s*", out[1])
    assert not fake.sent("DescribeClusterRequest")


def test_replication_human_readable(fake, capsys):
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093",
                          "describe", "--replication", "--human-readable")
    assert (code, out) == (0, HUMAN)
    cell = out[1].split("\t")[4]  # MetadataQuorumCommandTest.assertHumanReadable
    assert "ms ago" in cell and re.fullmatch(r"\d*", cell.split(" ")[0])


def test_relative_time_refuses_clock_drift():
    assert qt.relative_time_ms(T, "last fetch", T) == 0
    for bad in (0, T + 1):
        with pytest.raises(qt.QuorumToolError) as e:
            qt.relative_time_ms(bad, "last fetch", T)
        assert str(e.value) == ("Error while computing relative time, possible drift in system clock. "
                                f"Current timestamp is {T}, last fetch timestamp is {bad}")


# ---------------------------------------------------------------------------------------------
# finding the leader


def test_redirect_to_the_leader_on_the_same_listener(fake):
    fake.leader = C2  # node 2 leads: its CONTROLLER endpoint is listed after its SSL one
    address, info = qt.find_leader([C1], fake)
    assert address == C2 and info.leader_id == 1
    assert [a for a, _ in fake.sent("DescribeQuorumRequest")] == [C1, C2]
    by_ssl = FakeQuorum(leader=SSL2)  # came in by SSL: sent on to the leader's SSL listener
    assert qt.find_leader([SSL1], by_ssl)[0] == SSL2
    assert [a for a, _ in by_ssl.sent("DescribeQuorumRequest")] == [SSL1, SSL2]


def test_redirect_through_describe_cluster_when_the_answer_names_no_leader(fake, capsys):
    fake.leader, fake.redirect_nodes = C3, ()  # Kafka's own controllers answer with no endpoints
    fake.answers["DescribeClusterRequest"] = cluster_answer(3, (DC.DescribeClusterBroker(
        broker_id=3, host="localhost", port=9097, rack=None, is_fenced=False),))
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status")
    assert code == 0 and out == STATUS
    assert [a for a, _ in fake.sent("DescribeQuorumRequest")] == [C1, C3]


def test_next_bootstrap_address_when_one_is_down(fake, capsys):
    fake.down = {C2}
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9095,localhost:9093",
                          "describe", "--replication")
    assert code == 0 and out == REPLICATION
    assert [a for a, _ in fake.sent("DescribeQuorumRequest")] == [C2, C1]


def test_all_bootstrap_addresses_failing_is_one_line(fake, capsys):
    fake.down = {C1, C2}
    code, out, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093,localhost:9095",
                            "describe", "--status")
    assert (code, out) == (1, [])
    assert err == ["kraftd: no quorum leader reached through localhost:9093, localhost:9095 "
                   "(localhost:9093: connection refused; localhost:9095: connection refused)"]


def test_not_leader_with_no_leader_anywhere(fake, capsys):
    fake.leader, fake.redirect_nodes, fake.cluster = ("nowhere", 1), (), False
    code, _, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "describe", "--status")
    assert code == 1 and len(err) == 1
    assert err[0].startswith("kraftd: no quorum leader reached through localhost:9093 "
                             "(localhost:9093: NOT_LEADER_OR_FOLLOWER: ")


def test_error_answer_is_named(fake, capsys):
    fake.answers["DescribeQuorumRequest"] = quorum_answer(error=ErrorCode.unknown_topic_or_partition)
    code, _, err = kraftd(capsys, "quorum", "--bootstrap-server", "localhost:9093", "describe", "--status")
    assert code == 1
    assert err == ["kraftd: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition."]


def test_bootstrap_server_asks_describe_cluster_for_brokers_first(fake, capsys):
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-server", "localhost:9093", "describe", "--status")
    assert code == 0 and out == STATUS
    assert [r.endpoint_type for _, r in fake.sent("DescribeClusterRequest")] == [1]


# ---------------------------------------------------------------------------------------------
# add-controller and remove-controller


def controller_config(tmp_path: Path, directory_id: uuid.UUID | None = DIR[1], **extra: str) -> Path:
    """MetadataQuorumCommandUnitTestEnv: a formatted metadata dir and the controller's properties."""
    metadata = tmp_path / "metadata"
    metadata.mkdir()
    write_meta_properties(metadata, MetaProperties(1, "Ig-WB32JRqqzct3VafTr0w", 2, directory_id))
    props = {"metadata.log.dir": str(metadata), "log.dirs": str(metadata), "process.roles": "controller,broker",
             "node.id": "5", "controller.listener.names": "CONTROLLER,CONTROLLER_SSL",
             "listeners": "CONTROLLER://:9093,CONTROLLER_SSL://:9094",
             "advertised.listeners": "CONTROLLER://example.com:9093,CONTROLLER_SSL://example.com:9094", **extra}
    config = tmp_path / "controller.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v is not None))
    return config


ADDED = ("controller 5 with directory id wZoXPqWoSu6F6c8MkmdyAg and endpoints: "
         "CONTROLLER://example.com:9093, CONTROLLER_SSL://example.com:9094")


def test_add_controller_request_and_line(fake, capsys, tmp_path):
    fake.leader = C2
    fake.answers["AddRaftVoterRequest"] = ADD.AddRaftVoterResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None)
    code, out, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093",
                            "--command-config", controller_config(tmp_path), "add-controller")
    assert (code, err, out) == (0, [], ["Added " + ADDED])
    (address, request), = fake.sent("AddRaftVoterRequest")
    assert address == C2  # the leader, found as describe finds it
    assert request.cluster_id == "Ig-WB32JRqqzct3VafTr0w"
    assert request.timeout == timedelta(milliseconds=30_000)
    assert (request.voter_id, request.voter_directory_id) == (5, DIR[1])
    assert [(lis.name, lis.host, lis.port) for lis in request.listeners] == [
        ("CONTROLLER", "example.com", 9093), ("CONTROLLER_SSL", "example.com", 9094)]
    assert request.ack_when_committed is True
    encode_entity(request)  # a request the wire can carry


def test_add_controller_dry_run_sends_nothing(fake, capsys, tmp_path):
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-server", "localhost:9092",
                          "--command-config", controller_config(tmp_path), "add-controller", "--dry-run")
    assert (code, out, fake.calls) == (0, ["DRY RUN of adding " + ADDED], [])


def test_add_controller_error_answer(fake, capsys, tmp_path):
    fake.answers["AddRaftVoterRequest"] = ADD.AddRaftVoterResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.duplicate_voter, error_message=None)
    code, out, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093",
                            "--command-config", controller_config(tmp_path), "add-controller")
    assert (code, out) == (1, [])
    assert err == ["kraftd: DUPLICATE_VOTER: The voter is already part of the set of voters."]


def test_controller_spec_from_listeners_only(tmp_path):
    config = controller_config(tmp_path, **{"advertised.listeners": None, "metadata.log.dir": None,
                                            "controller.listener.names": "controller,CONTROLLER2",
                                            "listeners": "CONTROLLER://example.com:9092,CONTROLLER2://:9093"})
    from engine.common.java_properties import load_properties

    spec = qt.controller_spec(load_properties(config))
    assert spec.endpoints == (("CONTROLLER", "example.com", 9092), ("CONTROLLER2", "localhost", 9093))
    assert (spec.node_id, spec.directory_id, spec.cluster_id) == (5, DIR[1], "Ig-WB32JRqqzct3VafTr0w")


@pytest.mark.parametrize("props, message", [
    ({"process.roles": "controller"},
     "node.id not found in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "-4", "process.roles": "controller"},
     "node.id was negative in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "4"},
     "process.roles did not contain 'controller' in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "4", "process.roles": "broker"},
     "process.roles did not contain 'controller' in configuration file. Is this a valid controller configuration file?"),
    ({"node.id": "4", "process.roles": "controller"},
     "Neither metadata.log.dir nor log.dirs were found. Is this a valid controller configuration file?"),
    ({"node.id": "4", "process.roles": "controller", "log.dirs": "/nonexistent/a,/b"},
     "Unable to read meta.properties from /nonexistent/a"),
])
def test_controller_spec_errors(props, message):
    with pytest.raises(qt.ConfigError) as e:
        qt.controller_spec(props)
    assert str(e.value) == message


def test_controller_endpoint_errors(tmp_path):
    with pytest.raises(qt.ConfigError, match="^controller.listener.names was not found. Is this a valid"):
        qt.controller_endpoints({})
    with pytest.raises(qt.ConfigError, match="^Cannot find information about controller listener name: CONTROLLER$"):
        qt.controller_endpoints({"controller.listener.names": "CONTROLLER,CONTROLLER2"})
    with pytest.raises(qt.ConfigError, match="^No directory id found in "):
        qt.controller_spec({"node.id": "5", "process.roles": "controller",
                            "metadata.log.dir": str(controller_config(tmp_path, None).parent / "metadata")})


def test_remove_controller(fake, capsys):
    fake.answers["RemoveRaftVoterRequest"] = RM.RemoveRaftVoterResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.none, error_message=None)
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "remove-controller",
                          "--controller-id", "2", "--controller-directory-id", "_KWDkTahTVaiVVVTaugNew")
    assert (code, out) == (0, ["Removed  KRaft controller 2 with directory id _KWDkTahTVaiVVVTaugNew"])
    (address, request), = fake.sent("RemoveRaftVoterRequest")
    assert (address, request.cluster_id, request.voter_id, request.voter_directory_id) == (C1, None, 2, DIR[2])
    encode_entity(request)


def test_remove_controller_dry_run_and_error(fake, capsys):
    code, out, _ = kraftd(capsys, "quorum", "--bootstrap-server", "localhost:9092", "remove-controller",
                          "-i", "2", "-d", "_KWDkTahTVaiVVVTaugNew", "--dry-run")
    assert (code, out, fake.calls) == (0, ["DRY RUN of removing  KRaft controller 2 with directory id "
                                           "_KWDkTahTVaiVVVTaugNew"], [])
    fake.answers["RemoveRaftVoterRequest"] = RM.RemoveRaftVoterResponse(
        throttle_time=timedelta(0), error_code=ErrorCode.voter_not_found, error_message="no voter 2 here")
    code, _, err = kraftd(capsys, "quorum", "--bootstrap-controller", "localhost:9093", "remove-controller",
                          "-i", "2", "-d", "_KWDkTahTVaiVVVTaugNew")
    assert (code, err) == (1, ["kraftd: VOTER_NOT_FOUND: no voter 2 here"])


# ---------------------------------------------------------------------------------------------
# bad arguments: one line, exit code 1 (MetadataQuorumCommandErrorTest)


B = ("quorum", "--bootstrap-server", "localhost:9092")


@pytest.mark.parametrize("args, message", [
    ((*B, "describe"), "One of --status or --replication must be specified with describe sub-command"),
    ((*B, "describe", "--status", "--replication"),
     "Only one of --status or --replication should be specified with describe sub-command"),
    ((*B, "describe", "--status", "--human-readable"),
     "The option --human-readable is only supported along with --replication"),
    ((*B, "describe", "--human-readable"),
     "One of --status or --replication must be specified with describe sub-command"),
    ((*B, "--command-config", "admin.properties", "describe"), "Properties file admin.properties does not exists!"),
    ((*B, "add-controller"), "You must supply the configuration file of the controller you are adding when "
                             "using add-controller."),
    ((*B, "remove-controller", "--controller-directory-id", "_KWDkTahTVaiVVVTaugNew", "--dry-run"),
     "the following arguments are required: --controller-id/-i"),
    ((*B, "remove-controller", "--controller-id", "1"),
     "the following arguments are required: --controller-directory-id/-d"),
    ((*B, "remove-controller", "-i", "-1", "-d", "_KWDkTahTVaiVVVTaugNew"), "Invalid negative --controller-id: -1"),
    ((*B, "remove-controller", "-i", "1", "-d", "AAAA"), "Failed to parse --controller-directory-id: 'AAAA' is "
     "not a Kafka uuid: expected 22 URL-safe base64 characters"),
    (("quorum", "describe", "--status"), "one of the arguments --bootstrap-server --bootstrap-controller is required"),
    ((*B, "--bootstrap-controller", "localhost:9093", "describe", "--status"),
     "argument --bootstrap-controller: not allowed with argument --bootstrap-server"),
    (("quorum", "--bootstrap-controller", "localhost", "describe", "--status"),
     "Invalid url in bootstrap.controllers: localhost"),
    (("quorum", "describe", "--status", "--bootstrap-server", "localhost:9092"),  # Kafka's order only
     "one of the arguments --bootstrap-server --bootstrap-controller is required"),
])
def test_argument_errors(fake, capsys, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    code, out, err = kraftd(capsys, *args)
    assert (code, out, err) == (1, [], [f"kraftd: {message}"])
    assert fake.calls == []


def test_parse_bootstrap():
    assert qt.parse_bootstrap("a:1, [::1]:9093,b.example:65535") == [("a", 1), ("::1", 9093), ("b.example", 65535)]
    with pytest.raises(qt.ConfigError, match="^No resolvable bootstrap urls given in bootstrap.servers$"):
        qt.parse_bootstrap(" , ", "bootstrap.servers")
