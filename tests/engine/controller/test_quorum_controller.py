"""The quorum controller's core on its own: requests, commits and leader changes in, appends
and answers out, with a log kept by the test (what Raft would commit) and the committed image
replayed from it through MetadataDelta, as the node's metadata listener does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.controller.commands import activation_hooks, all_commands, all_periodic, new_soft_state
from engine.controller.controller_config import ControllerConfig
from engine.controller.feature_control import supported_feature_ranges
from engine.controller.quorum_controller import ControllerOutput, QuorumController
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.raft.raft_io import LeaderAndEpoch
from engine.raft.raft_log import LogBatch
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i16, i32, i64, protocol_module, u16
from engine.server.controller_server import read_bootstrap_records
from tests.controller_helpers import new_uuid, request

NODE = 1
SCRAM = 51


class Harness:
    """One controller and the log Raft would keep for it: ``append`` what it asks, ``commit`` up to an offset."""

    def __init__(self) -> None:
        self.log: list[tuple[int, int, Any]] = []  # (offset, epoch, record)
        self.committed_to = -1
        self.image = MetadataImage()
        config = ControllerConfig(node_id=NODE)
        self.core = QuorumController(config, lambda: self.image,
                                     read_bootstrap_records(Path("/nonexistent")),  # the default records
                                     all_commands(), all_periodic(), new_soft_state(config), activation_hooks())
        self.epoch = 0
        self.answers: list[tuple[Any, Any]] = []

    @property
    def next_offset(self) -> int:
        return len(self.log)

    def take(self, out: ControllerOutput) -> None:
        for append in out.appends:
            for record in append.records:
                self.log.append((len(self.log), self.epoch, record))
        self.answers.extend(out.responses)

    def lead(self, epoch: int) -> None:
        """Raft: we lead ``epoch``, and its LeaderChange is the next entry."""
        self.epoch = epoch
        self.core.handle_leader_change(LeaderAndEpoch(NODE, epoch))
        self.log.append((len(self.log), epoch, m.NoOpRecordV0()))  # stands for the epoch's first batch

    def follow(self, leader: int, epoch: int) -> None:
        self.epoch = epoch
        self.core.handle_leader_change(LeaderAndEpoch(leader, epoch))

    def commit(self, up_to: int | None = None) -> None:
        up_to = len(self.log) - 1 if up_to is None else up_to
        batches = []
        delta = MetadataDelta(self.image)
        for offset, epoch, record in self.log[self.committed_to + 1:up_to + 1]:
            delta.replay(record, offset, epoch, 0)
            batches.append(LogBatch(offset, offset, epoch, 0, False, (record,), 10))
        if batches:
            self.image = delta.apply()
            self.committed_to = up_to
            self.core.handle_commit(batches)

    def poll(self, now_ms: int = 1000) -> None:
        self.take(self.core.poll(now_ms, self.next_offset))

    def submit(self, api_key: int, req: Any, token: Any) -> None:
        self.take(self.core.submit(1000, self.next_offset, api_key, req, token))


def active() -> Harness:
    """A controller that leads epoch 1 and has its bootstrap committed."""
    h = Harness()
    h.lead(1)
    h.commit()
    h.poll()
    h.commit()
    h.answers.clear()
    return h


def scram(user: str) -> Any:
    module = protocol_module("alter_user_scram_credentials", 0, "request")
    return request("alter_user_scram_credentials", 0, deletions=(), upsertions=(module.ScramCredentialUpsertion(
        name=user, mechanism=i8(1), iterations=i32(4096), salt=b"s",
        salted_password=b"p" * 32),))


def test_a_leader_claims_only_once_its_epoch_is_committed_and_bootstraps_an_empty_log() -> None:
    h = Harness()
    h.lead(1)
    h.poll()
    assert not h.core.is_active and h.log[-1][2].type_name == "NO_OP_RECORD"  # nothing appended yet
    h.submit(SCRAM, scram("early"), "early")
    assert h.answers == [("early", h.answers[0][1])] and h.answers[0][1].results[0].error_code == \
        ErrorCode.not_controller
    h.commit()
    h.poll()
    assert h.core.is_active
    names = [r.type_name for _, _, r in h.log[1:]]
    assert names[0] == "BEGIN_TRANSACTION_RECORD" and names[-1] == "END_TRANSACTION_RECORD"
    assert names[1] == "FEATURE_LEVEL_RECORD" and h.log[2][2].name == "metadata.version"
    h.commit()
    assert h.image.metadata_version == h.log[2][2].feature_level


def test_a_write_is_answered_once_committed_and_the_next_command_sees_it_before() -> None:
    h = active()
    h.submit(SCRAM, scram("alice"), "first")
    assert h.answers == []  # appended, not committed
    assert [u for _, u in h.core.image.scram] == ["alice"]  # the speculative image has it already
    assert h.image.scram == {}  # the committed one not yet
    h.submit(SCRAM, scram("alice"), "second")  # sees the first: same credential again, still a write
    h.commit(h.next_offset - 2)
    h.poll()
    assert [token for token, _ in h.answers] == ["first"]
    h.commit()
    h.poll()
    assert [token for token, _ in h.answers] == ["first", "second"]


def scram_deletion(user: str) -> Any:
    module = protocol_module("alter_user_scram_credentials", 0, "request")
    return request("alter_user_scram_credentials", 0, upsertions=(),
                   deletions=(module.ScramCredentialDeletion(name=user, mechanism=i8(1)),))


def test_a_write_that_writes_nothing_waits_for_the_writes_before_it() -> None:
    h = active()
    h.submit(SCRAM, scram_deletion("nobody"), "alone")  # nothing pending: answered at once
    assert [token for token, _ in h.answers] == ["alone"]
    assert h.answers[0][1].results[0].error_code == ErrorCode.resource_not_found
    h.answers.clear()
    h.submit(SCRAM, scram("carol"), "write")
    end = h.next_offset
    # It read the speculative image (carol exists there): answered only once carol is committed, as
    # Kafka answers a read-write event that returned no records after the highest pending offset.
    h.submit(SCRAM, scram_deletion("nobody"), "nothing written")
    assert h.answers == [] and h.next_offset == end
    h.commit()
    h.poll()
    assert [token for token, _ in h.answers] == ["write", "nothing written"]


def test_a_write_that_writes_nothing_waits_for_records_no_request_asked_for() -> None:
    # the bootstrap records of a claim (as a periodic task's) have no request waiting on them
    h = Harness()
    h.lead(1)
    h.commit()
    h.poll()
    assert h.core.is_active and h.next_offset > h.committed_to + 1  # the bootstrap appended, uncommitted
    h.submit(SCRAM, scram_deletion("nobody"), "after the bootstrap")
    assert h.answers == []
    h.commit()
    h.poll()
    assert [token for token, _ in h.answers] == ["after the bootstrap"]
    h.submit(SCRAM, scram_deletion("nobody"), "at once")  # everything committed: answered now
    assert [token for token, _ in h.answers] == ["after the bootstrap", "at once"]


def test_losing_the_leadership_answers_pending_writes_not_controller_and_drops_the_speculation() -> None:
    h = active()
    h.submit(SCRAM, scram("bob"), "pending")
    assert [u for _, u in h.core.image.scram] == ["bob"]
    h.follow(2, 2)
    assert not h.core.is_active
    h.poll()
    assert [(token, r.results[0].error_code) for token, r in h.answers] == [("pending", ErrorCode.not_controller)]
    assert h.core.image == h.image and h.core.image.scram == {}


def test_a_new_leader_on_a_bootstrapped_log_writes_no_second_bootstrap() -> None:
    h = active()
    h.follow(2, 2)
    before = len(h.log)
    h.lead(3)
    h.commit()
    h.poll()
    assert h.core.is_active and len(h.log) == before + 1  # only the stand-in for epoch 3's first batch
    assert h.core.image.features == h.image.features
    assert i16(h.image.metadata_version) == h.log[2][2].feature_level


def test_an_admin_operation_of_more_than_ten_thousand_records_fails_whole() -> None:
    """Kafka's MAX_RECORDS_PER_USER_OP: 100 topics of 100 partitions are 10,100 records, refused
    with POLICY_VIOLATION and nothing appended; 99 topics of 100 pass."""
    h = active()
    h.take(h.core.submit(1000, h.next_offset, 62, _broker_registration(), "register"))
    h.commit()
    h.poll()
    epoch = h.core.image.cluster.brokers[1].epoch
    h.submit(63, request("broker_heartbeat", 2, broker_id=i32(1), broker_epoch=i64(epoch),
                         current_metadata_offset=i64(h.next_offset), want_fence=False, want_shut_down=False,
                         offline_log_dirs=(), cordoned_log_dirs=None), "beat")
    h.commit()
    h.poll()
    assert not h.core.image.cluster.brokers[1].fenced

    def create(count: int, token: str) -> Any:
        module = protocol_module("create_topics", 7, "request")
        topics = tuple(module.CreatableTopic(name=f"{token}-{i}", num_partitions=i32(100), replication_factor=i16(1),
                                             assignments=(), configs=()) for i in range(count))
        before = len(h.log)
        h.submit(19, request("create_topics", 7, topics=topics, timeout=i32(60000), validate_only=False), token)
        return len(h.log) - before

    assert create(100, "big") == 0
    token, refused = h.answers[-1]
    assert token == "big" and {t.error_code for t in refused.topics} == {ErrorCode.policy_violation}
    assert create(99, "fits") == 99 * 101


def _broker_registration() -> Any:
    module = protocol_module("broker_registration", 4, "request")
    return request("broker_registration", 4, broker_id=i32(1), cluster_id="", incarnation_id=None,
                   listeners=(module.Listener(name="PLAINTEXT", host="b1", port=u16(9092),
                                              security_protocol=i16(0)),),
                   features=tuple(module.Feature(name=name, min_supported_version=i16(low),
                                                 max_supported_version=i16(high))
                                  for name, (low, high) in supported_feature_ranges().items()),
                   rack=None, log_dirs=(new_uuid(7),), previous_broker_epoch=i64(-1))


def test_a_failing_command_answers_unknown_server_error_and_a_failing_task_renounces() -> None:
    """A bug of ours never takes the node down: a command that raises is answered
    UNKNOWN_SERVER_ERROR with nothing appended; a periodic task that raises makes the
    controller renounce, as Kafka's does after a failed event."""
    from dataclasses import replace

    h = active()
    broken = replace(h.core.commands[SCRAM], handle=lambda ctx, req: 1 / 0)
    h.core.commands = {**h.core.commands, SCRAM: broken}
    before = len(h.log)
    h.submit(SCRAM, scram("x"), "broken")
    token, answer = h.answers[-1]
    assert token == "broken" and answer.results[0].error_code == ErrorCode.unknown_server_error
    assert len(h.log) == before and h.core.is_active
    h.core.periodic = (lambda ctx: 1 / 0,)
    h.poll()
    assert not h.core.is_active


def test_reads_answer_from_the_committed_image_even_while_active() -> None:
    """DescribeAcls sees a created ACL only once it is committed (a failover could lose it before)."""
    h = active()
    create = protocol_module("create_acls", 3, "request")
    h.submit(30, request("create_acls", 3, creations=(create.AclCreation(
        resource_type=i8(2), resource_name="t", resource_pattern_type=i8(3), principal="User:a", host="*",
        operation=i8(3), permission_type=i8(3)),)), "create")

    def described() -> int:
        h.submit(29, request("describe_acls", 3, resource_type_filter=i8(1), resource_name_filter=None,
                             pattern_type_filter=i8(1), principal_filter=None, host_filter=None, operation=i8(1),
                             permission_type=i8(1)), "describe")
        return len(h.answers[-1][1].resources)

    assert described() == 0
    h.commit()
    assert described() == 1
