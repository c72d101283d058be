"""BrokerHeartbeat and session expiry, in the rhythm of Kafka's ReplicationControlManagerTest and
BrokerHeartbeatManagerTest: command, response, replay, state. Every row of the heartbeat table
of Kafka 4.1's calculateNextBrokerState, the records it writes (at Kafka 4.1.2's fixed versions:
0 to fence or unfence, 1 for controlled shutdown, 2 for offline directories), and expiry one
broker at a time on an injected clock."""

from __future__ import annotations

import pytest

from engine.controller import cluster_control as cc
from engine.controller.broker_heartbeat_manager import (
    NO_ACTIVE_BROKER, BrokerControlState, BrokerHeartbeatManager, new_soft_state, on_activation)
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import ApiError
from engine.image.metadata_delta import MetadataDelta
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i32, i64
from tests.controller_helpers import bootstrapped, context, new_uuid, replayed, request
from tests.engine.controller.test_controller_cluster import CONFIG, registration

T0 = 1_000_000
SESSION_MS = CONFIG.broker_session_timeout_ms


class Cluster:
    """An image and the controller's soft state, moved only by commands and their records."""

    def __init__(self, release: str = "4.1-IV1", config: ControllerConfig = CONFIG):
        self.image, self.config = bootstrapped(release), config
        self.soft = new_soft_state(config)

    def run(self, command, req, now_ms: int = T0):
        ctx = context(self.image, now_ms=now_ms, config=self.config, soft=self.soft)
        result = command(ctx, req)
        self.image = replayed(self.image, result, ctx.next_offset)
        return result

    def register(self, broker_id: int, **kw):
        return self.run(cc.register_broker, registration(broker_id, **kw))

    def epoch(self, broker_id: int) -> int:
        return self.image.cluster.brokers[broker_id].epoch

    def heartbeat(self, broker_id: int, now_ms: int = T0, offset: int | None = None, want_fence: bool = False,
                  want_shut_down: bool = False, epoch: int | None = None, offline: tuple = ()):
        req = request("broker_heartbeat", 1, broker_id=i32(broker_id),
                      broker_epoch=i64(self.epoch(broker_id) if epoch is None else epoch),
                      current_metadata_offset=i64(self.image.provenance.last_offset if offset is None else offset),
                      want_fence=want_fence, want_shut_down=want_shut_down, offline_log_dirs=offline)
        return self.run(cc.broker_heartbeat, req, now_ms)

    def expire(self, now_ms: int):
        ctx = context(self.image, now_ms=now_ms, config=self.config, soft=self.soft)
        result = cc.expire_sessions(ctx)
        if result is not None:
            self.image = replayed(self.image, result, ctx.next_offset)
        return result

    def state(self, broker_id: int) -> BrokerControlState:
        return self.soft.heartbeats.current_state(broker_id, self.image.cluster.brokers[broker_id].fenced)


def reply(result) -> tuple[bool, bool, bool]:
    r = result.response
    assert r.error_code == ErrorCode.none
    return r.is_caught_up, r.is_fenced, r.should_shut_down


def change(broker_id: int, epoch: int, fenced: int = 0, shutdown: int = 0):
    if shutdown:
        return m.BrokerRegistrationChangeRecordV1(broker_id=i32(broker_id), broker_epoch=i64(epoch),
                                                  in_controlled_shutdown=i8(1))
    return m.BrokerRegistrationChangeRecordV0(broker_id=i32(broker_id), broker_epoch=i64(epoch), fenced=i8(fenced))


def running(*broker_ids: int, release: str = "4.1-IV1") -> Cluster:
    cluster = Cluster(release)
    for b in broker_ids:
        cluster.register(b)
    for b in broker_ids:
        cluster.heartbeat(b)
    assert all(not cluster.image.cluster.brokers[b].fenced for b in broker_ids)
    return cluster


# -- epochs ---------------------------------------------------------------------------------

def test_a_heartbeat_before_registration_or_at_another_epoch_is_stale():
    cluster = Cluster()
    cluster.register(1)
    for broker_id, epoch in ((2, 0), (1, cluster.epoch(1) + 1)):
        req = request("broker_heartbeat", 1, broker_id=i32(broker_id), broker_epoch=i64(epoch),
                      current_metadata_offset=i64(100), want_fence=False, want_shut_down=False)
        with pytest.raises(ApiError) as caught:
            cc.broker_heartbeat(context(cluster.image, config=CONFIG, soft=cluster.soft), req)
        assert caught.value.code == ErrorCode.stale_broker_epoch
        err = cc.heartbeat_error(req, caught.value.code, caught.value.message)
        assert (err.error_code, err.is_fenced, err.should_shut_down) == (ErrorCode.stale_broker_epoch, True, False)
    # a stale heartbeat still counts as contact for the epoch it named (Kafka's tracker)
    assert cluster.soft.heartbeats.contact_ms(1, cluster.epoch(1) + 1) == 1_000_000


def test_caught_up_once_the_offset_reaches_the_registration_record():
    cluster = Cluster()
    cluster.register(1)
    epoch = cluster.epoch(1)
    assert reply(cluster.heartbeat(1, offset=epoch - 1)) == (False, True, False)
    assert cluster.heartbeat(1, offset=epoch - 1).records == []
    result = cluster.heartbeat(1, offset=epoch)
    assert reply(result) == (True, False, False)
    assert result.records == [change(1, epoch, fenced=-1)]
    assert not cluster.image.cluster.brokers[1].fenced


# -- the table of calculateNextBrokerState ---------------------------------------------------

def test_fenced_and_wants_to_shut_down_is_told_to_shut_down_now():
    cluster = Cluster()
    cluster.register(1)
    result = cluster.heartbeat(1, want_shut_down=True)
    assert reply(result) == (True, True, True)
    assert result.records == [change(1, cluster.epoch(1), fenced=1)]  # Kafka fences it again
    assert cluster.image.cluster.brokers[1].fenced


@pytest.mark.parametrize("want_fence, behind", [(True, False), (False, True), (True, True)])
def test_fenced_stays_fenced_while_it_wants_fencing_or_is_behind(want_fence, behind):
    cluster = Cluster()
    cluster.register(1)
    offset = cluster.epoch(1) - 1 if behind else cluster.epoch(1)
    result = cluster.heartbeat(1, offset=offset, want_fence=want_fence)
    assert result.records == [] and reply(result) == (not behind, True, False)
    assert cluster.state(1) is BrokerControlState.FENCED


def test_unfenced_stays_unfenced():
    cluster = running(1)
    result = cluster.heartbeat(1)
    assert result.records == [] and reply(result) == (True, False, False)


@pytest.mark.parametrize("want_shut_down, should", [(False, False), (True, True)])
def test_unfenced_that_wants_fencing_is_fenced_or_shut_down(want_shut_down, should):
    cluster = running(1)
    result = cluster.heartbeat(1, want_fence=True, want_shut_down=want_shut_down)
    assert result.records == [change(1, cluster.epoch(1), fenced=1)]
    assert reply(result) == (True, True, should)
    assert cluster.image.cluster.brokers[1].fenced


def test_unfenced_leading_nothing_that_wants_to_shut_down_shuts_down_now():
    cluster = running(1)
    result = cluster.heartbeat(1, want_shut_down=True)
    assert result.records == [change(1, cluster.epoch(1), fenced=1)]
    assert reply(result) == (True, True, True)
    assert cluster.soft.heartbeats.controlled_shutdown_offset(1) is None


def test_controlled_shutdown_ends_once_every_active_broker_has_its_offset():
    cluster = running(1, 2)
    hb = cluster.soft.heartbeats
    cluster.heartbeat(2, offset=50)
    hb.maybe_update_controlled_shutdown_offset(1, 60)
    assert cluster.state(1) is BrokerControlState.CONTROLLED_SHUTDOWN
    assert hb.lowest_active_offset(cluster.image) == 50  # broker 1 is shutting down: not active
    result = cluster.heartbeat(1, want_shut_down=True)
    assert result.records == [] and reply(result)[1:] == (False, False)
    cluster.heartbeat(2, offset=60)
    result = cluster.heartbeat(1, want_shut_down=True)
    assert result.records == [change(1, cluster.epoch(1), fenced=1)] and reply(result)[1:] == (True, True)
    assert hb.controlled_shutdown_offset(1) is None and cluster.image.cluster.brokers[1].fenced


def test_the_controlled_shutdown_offset_is_set_once_and_only_unfenced_brokers_are_active():
    hb = BrokerHeartbeatManager(SESSION_MS)
    hb.maybe_update_controlled_shutdown_offset(1, 10)
    hb.maybe_update_controlled_shutdown_offset(1, 20)
    assert hb.controlled_shutdown_offset(1) == 10
    hb.touch(1, fenced=True, metadata_offset=5)  # fencing ends a controlled shutdown
    assert hb.controlled_shutdown_offset(1) is None
    assert hb.lowest_active_offset(bootstrapped()) == NO_ACTIVE_BROKER


def test_an_unfencing_record_forgets_the_reported_offset_until_the_next_heartbeat():
    cluster = Cluster()
    cluster.register(1)
    cluster.heartbeat(1, offset=cluster.epoch(1) + 5)
    assert cluster.soft.heartbeats.metadata_offset(1) == -1
    cluster.heartbeat(1, offset=77)
    assert cluster.soft.heartbeats.metadata_offset(1) == 77


# -- offline directories --------------------------------------------------------------------

def test_offline_directories_leave_the_registration_from_3_7_iv2():
    cluster = Cluster("4.1-IV1")
    cluster.register(1, log_dirs=(new_uuid(501), new_uuid(502)))
    cluster.heartbeat(1)
    result = cluster.heartbeat(1, offline=(new_uuid(502), new_uuid(999)))
    assert [(r.type_name, r.version, r.log_dirs) for r in result.records] == [
        ("BROKER_REGISTRATION_CHANGE_RECORD", 2, (new_uuid(501),))]
    assert result.response.error_code == ErrorCode.none
    assert cluster.image.cluster.brokers[1].directories == (new_uuid(501),)
    assert cluster.heartbeat(1, offline=(new_uuid(502),)).records == []  # already gone


def test_replicas_in_an_offline_directory_leave_the_isr_and_the_leadership_first():
    # Kafka's handleDirectoriesOffline: broker 1 leads p0 from dir 502 and follows p1 from 501
    cluster = Cluster("4.1-IV1")
    cluster.register(1, log_dirs=(new_uuid(501), new_uuid(502)))
    cluster.register(2, log_dirs=(new_uuid(601),))
    cluster.heartbeat(1)
    cluster.heartbeat(2)
    delta = MetadataDelta(cluster.image)
    topic = new_uuid(7)
    delta.replay(m.TopicRecordV0(name="t", topic_id=topic))
    for pid, leader, mine in ((0, 1, 502), (1, 2, 501)):
        delta.replay(m.PartitionRecordV2(
            partition_id=i32(pid), topic_id=topic, replicas=(i32(1), i32(2)), isr=(i32(1), i32(2)),
            removing_replicas=(), adding_replicas=(), leader=i32(leader), leader_recovery_state=i8(0),
            leader_epoch=i32(0), partition_epoch=i32(0), directories=(new_uuid(mine), new_uuid(601))))
    cluster.image = delta.apply()
    result = cluster.heartbeat(1, offline=(new_uuid(502),))
    assert [r.type_name for r in result.records] == ["PARTITION_CHANGE_RECORD", "BROKER_REGISTRATION_CHANGE_RECORD"]
    p0, p1 = (cluster.image.topics.by_id[topic].partitions[i] for i in (0, 1))
    assert (p0.leader, p0.isr) == (2, (2,))
    assert (p1.leader, p1.isr) == (2, (1, 2))  # its replica on the online dir stays


def test_offline_directories_write_nothing_before_3_7_iv2():
    cluster = running(1, release="3.7-IV1")
    assert cluster.heartbeat(1, offline=(new_uuid(5),)).records == []


# -- record versions across metadata.version levels -----------------------------------------

@pytest.mark.parametrize("release", ["3.3-IV3", "3.7-IV2", "4.1-IV1", "4.3-IV0"])
def test_fencing_records_keep_kafkas_versions_at_every_level(release):
    cluster = Cluster(release)
    cluster.register(1)
    unfence = cluster.heartbeat(1).records
    fence = cluster.heartbeat(1, want_fence=True).records
    assert [(r.type_name, r.version) for r in unfence + fence] == [
        ("BROKER_REGISTRATION_CHANGE_RECORD", 0), ("BROKER_REGISTRATION_CHANGE_RECORD", 0)]
    assert (unfence[0].fenced, fence[0].fenced) == (-1, 1)


# -- session expiry -------------------------------------------------------------------------

def test_sessions_expire_one_broker_per_poll_oldest_first():
    cluster = running(1, 2, 3)
    cluster.heartbeat(1, now_ms=T0 + 100)
    cluster.heartbeat(3, now_ms=T0 + 200)
    cluster.heartbeat(2, now_ms=T0 + 300)
    assert cluster.expire(T0 + 100 + SESSION_MS) is None  # last contact + timeout is not yet < now
    first = cluster.expire(T0 + 100 + SESSION_MS + 1)
    assert first.records == [change(1, cluster.epoch(1), fenced=1)]
    assert [b for b, r in cluster.image.cluster.brokers.items() if r.fenced] == [1]
    assert cluster.expire(T0 + 100 + SESSION_MS + 1) is None
    late = T0 + 10 * SESSION_MS
    assert cluster.expire(late).records == [change(3, cluster.epoch(3), fenced=1)]
    assert cluster.expire(late).records == [change(2, cluster.epoch(2), fenced=1)]
    assert cluster.expire(late) is None


def test_more_fencing_per_poll_when_configured():
    cluster = running(1, 2)
    cluster.config = ControllerConfig(node_id=3000, cluster_id=CONFIG.cluster_id, fence_per_poll=5)
    result = cluster.expire(T0 + SESSION_MS + 1)
    assert [r.broker_id for r in result.records] == [1, 2]


def test_a_registration_is_no_session_and_an_old_epochs_session_fences_nothing():
    cluster = Cluster()
    cluster.register(1)
    assert cluster.expire(T0 + 10 * SESSION_MS) is None  # registered, never heartbeated
    cluster.heartbeat(1, now_ms=T0)
    old_epoch = cluster.epoch(1)
    # a fenced broker's session counts too: a new incarnation waits for it to expire
    with pytest.raises(ApiError):
        cluster.run(cc.register_broker, registration(1, incarnation=new_uuid(42)), T0 + SESSION_MS)
    cluster.run(cc.register_broker, registration(1, incarnation=new_uuid(42)), T0 + SESSION_MS + 1)
    assert cluster.epoch(1) != old_epoch
    assert cluster.expire(T0 + SESSION_MS + 1) is None  # the old epoch's session is dropped
    assert cluster.soft.heartbeats.contact_ms(1, old_epoch) is None


def test_a_fenced_broker_whose_session_expires_is_fenced_again_as_kafka_does():
    cluster = Cluster()
    cluster.register(1)
    cluster.heartbeat(1, offset=cluster.epoch(1) - 1)  # still catching up: fenced, with a session
    assert cluster.expire(T0 + SESSION_MS + 1).records == [change(1, cluster.epoch(1), fenced=1)]


def test_a_controlled_shutdown_ends_with_the_session():
    cluster = running(1)
    cluster.soft.heartbeats.maybe_update_controlled_shutdown_offset(1, 99)
    assert cluster.expire(T0 + SESSION_MS + 1).records == [change(1, cluster.epoch(1), fenced=1)]
    assert cluster.soft.heartbeats.controlled_shutdown_offset(1) is None


def test_activation_gives_every_unfenced_broker_a_full_session_from_the_claim():
    cluster = running(1, 2)
    cluster.register(3)  # fenced: no session
    fresh = new_soft_state(CONFIG)
    claim = T0 + 60_000
    on_activation(fresh, cluster.image, claim)
    cluster.soft = fresh
    assert cluster.expire(claim + SESSION_MS) is None
    assert [fresh.heartbeats.contact_ms(b, cluster.epoch(b)) for b in (1, 2, 3)] == [claim, claim, None]
    assert cluster.heartbeat(2, now_ms=claim + SESSION_MS).records == []
    assert cluster.expire(claim + SESSION_MS + 1).records == [change(1, cluster.epoch(1), fenced=1)]
    assert cluster.expire(claim + SESSION_MS + 1) is None


def test_a_live_session_blocks_a_duplicate_until_it_expires():
    cluster = running(1)
    hb = cluster.soft.heartbeats
    assert hb.has_valid_session(1, cluster.epoch(1), T0 + SESSION_MS)
    assert not hb.has_valid_session(1, cluster.epoch(1), T0 + SESSION_MS + 1)
    assert not hb.is_expired(T0, T0 - 5)  # a clock behind the contact never expires it


# -- partition effects (engine/controller/replication_control.py) ---------------------------

def with_partition(cluster: Cluster, replicas: tuple, isr: tuple, leader: int, elr: tuple = ()) -> None:
    """A topic "t" with one partition, written as records and replayed."""
    topic_id = new_uuid(4242)
    delta = MetadataDelta(cluster.image)
    offset = cluster.image.provenance.last_offset + 1
    delta.replay(m.TopicRecordV0(name="t", topic_id=topic_id), offset)
    delta.replay(m.PartitionRecordV2(
        partition_id=i32(0), topic_id=topic_id, replicas=tuple(map(i32, replicas)), isr=tuple(map(i32, isr)),
        removing_replicas=(), adding_replicas=(), leader=i32(leader), leader_recovery_state=i8(0),
        leader_epoch=i32(0), partition_epoch=i32(0), directories=(None,) * len(replicas),
        eligible_leader_replicas=tuple(map(i32, elr)) or None, last_known_elr=None), offset + 1)
    cluster.image = delta.apply()


def partition(cluster: Cluster):
    return cluster.image.topics.topic("t").partitions[0]


def kinds(result) -> list[tuple[str, int]]:
    return [(r.type_name, r.version) for r in result.records]


def test_a_leader_that_wants_to_shut_down_moves_its_leaderships_first():
    cluster = running(1, 2)
    with_partition(cluster, (1, 2), (1, 2), leader=1)
    first = cluster.image.provenance.last_offset + 1
    result = cluster.heartbeat(1, want_shut_down=True)
    assert reply(result) == (True, False, False)  # CONTROLLED_SHUTDOWN: neither fenced nor told to stop
    assert result.records[0] == change(1, cluster.epoch(1), shutdown=1)
    assert kinds(result)[1:] == [("PARTITION_CHANGE_RECORD", 2)]
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2,))
    assert cluster.image.cluster.brokers[1].in_controlled_shutdown
    shutdown_offset = first + len(result.records) - 1
    assert cluster.soft.heartbeats.controlled_shutdown_offset(1) == shutdown_offset
    # broker 2 has not reported that offset yet: broker 1 waits
    assert cluster.heartbeat(1, want_shut_down=True).records == []
    cluster.heartbeat(2, offset=shutdown_offset)
    done = cluster.heartbeat(1, want_shut_down=True)
    assert reply(done)[1:] == (True, True) and done.records == [change(1, cluster.epoch(1), fenced=1)]


def test_expiry_moves_the_leadership_then_fences():
    cluster = running(1, 2)
    with_partition(cluster, (1, 2), (1, 2), leader=1)
    cluster.heartbeat(2, now_ms=T0 + 5000)
    result = cluster.expire(T0 + SESSION_MS + 1)
    assert kinds(result) == [("PARTITION_CHANGE_RECORD", 2), ("BROKER_REGISTRATION_CHANGE_RECORD", 0)]
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2,))
    assert cluster.image.cluster.brokers[1].fenced


def test_unfencing_elects_the_broker_where_a_partition_has_no_leader():
    cluster = Cluster("3.7-IV2")
    cluster.register(1)
    with_partition(cluster, (1,), (1,), leader=-1)
    result = cluster.heartbeat(1)
    assert result.records[0] == change(1, cluster.epoch(1), fenced=-1)
    assert kinds(result)[1:] == [("PARTITION_CHANGE_RECORD", 1)]
    assert partition(cluster).leader == 1


@pytest.mark.parametrize("clean", [True, False])
def test_a_new_incarnation_leaves_the_isr_and_after_an_unclean_shutdown_the_elr(clean):
    cluster = running(1, 2, 3)
    with_partition(cluster, (1, 2, 3), (2,), leader=2, elr=(1,))
    old_epoch = cluster.epoch(1)
    now = T0 + SESSION_MS + 1  # the old session has expired
    result = cluster.run(cc.register_broker, registration(1, incarnation=new_uuid(77),
                                                         previous_broker_epoch=old_epoch if clean else -1), now)
    assert kinds(result)[-1] == ("REGISTER_BROKER_RECORD", 3)
    assert 1 not in partition(cluster).isr
    assert (1 in partition(cluster).elr) is clean
    # the epoch is the first record's offset; being caught up needs the registration record
    assert result.response.broker_epoch == cluster.epoch(1)
    assert cluster.soft.heartbeats.registration_offset(1, cluster.epoch(1)) == cluster.epoch(1) + len(result.records) - 1


def test_unregistering_a_broker_takes_it_out_of_the_isr():
    cluster = running(1, 2)
    with_partition(cluster, (1, 2), (1, 2), leader=1)
    result = cluster.run(cc.unregister_broker, request("unregister_broker", 0, broker_id=i32(1)))
    assert kinds(result) == [("PARTITION_CHANGE_RECORD", 2), ("UNREGISTER_BROKER_RECORD", 0)]
    assert (partition(cluster).leader, partition(cluster).isr) == (2, (2,))
    assert 1 not in cluster.image.cluster.brokers
