"""Our partition change builder against Kafka's own PartitionChangeBuilder, live.

Hypothesis draws a partition (replicas, ISR, ELR, last-known ELR, leader, recovery state,
reassignment, directories), who may lead (fenced and shutting-down brokers), min ISR, the
election type, the targets (ISR, replicas, removing/adding, recovery state, directories,
unclean shutdowns), ELR on or off and a metadata.version; ours
(engine.controller.partition_change.build_partition_change) and Kafka's
(tests/kafka/harness/PartitionChangeOp.java, asked through tests/kafka_peer/partition_changes.py)
must build the same PartitionChangeRecord, field
by field and byte for byte, or both none.

The named cases below are rules worth keeping in sight (each was a unit test's vector, now
checked against Kafka itself); a difference the property finds is kept beside them.
"""

from __future__ import annotations

import os

import functools
import uuid
from typing import Any

import pytest
from hypothesis import assume, example, given, settings, strategies as st

from engine.common.directory_id import LOST, MIGRATING, UNASSIGNED
from engine.image.metadata_version import BY_NAME
from kafka_peer.harness import DIFF_EXAMPLES
from kafka_peer.partition_changes import PartitionChangeCase as Case, described, kafka_builds

pytestmark = pytest.mark.kafka

DIR_A = uuid.UUID("00000000-0000-0000-0000-0000000000a1")  # above Kafka's reserved ids (< 100)
DIR_B = uuid.UUID("6b7c8d9e-0000-4000-8000-00000000b0b0")
DIRECTORIES = (MIGRATING, UNASSIGNED, LOST, DIR_A, DIR_B)
ELR_FIRST = "4.0-IV1"  # the first metadata.version with ELR records; Kafka turns ELR on only from there


# -- the cases Hypothesis draws ----------------------------------------------------------------

# (Each choice shrinks towards the common case: a draw of 0 is no reassignment, a leader from
# the ISR, no unclean shutdown.)
# Small ids, and ids whose Java hash buckets differ from their order (HashSet order reaches the ELR).
BROKER_POOLS = ((1, 2, 3, 4, 5), (1, 2, 17, 1001, 65537, 131074))
# The levels where the builder's behaviour turns, and the newest of each release.
LEVEL_NAMES = ("3.3-IV3", "3.5-IV2", "3.6-IV0", "3.7-IV1", "3.7-IV2", "3.9-IV0", "4.0-IV0", "4.0-IV1",
               "4.0-IV3", "4.1-IV1", "4.2-IV1", "4.3-IV0", "4.4-IV2", "4.5-IV0")


# The strategies are built once: building one per draw (sampled_from(replicas), ...) cost more
# than Kafka's answer. A case draws positions into its own lists instead.
POSITION = st.integers(0, 5)  # into a list of at most six brokers
POSITIONS = st.lists(POSITION, unique=True, max_size=6)  # an ordered pick, shrinking to the first ones
SOME_POSITIONS = st.none() | POSITIONS  # a target left to the partition (None), or one
BITS = st.integers(0, 2 ** 6 - 1)  # a set of the pool's brokers
ONE_IN = {n: st.integers(0, n - 1) for n in (2, 3, 4, 10)}
DIRECTORY_ROW = st.lists(st.sampled_from(DIRECTORIES), min_size=6, max_size=6)
PLACEMENTS = st.lists(st.tuples(POSITION, st.sampled_from(DIRECTORIES)), max_size=3)
RECOVERY = st.sampled_from([0, 1])
SOME_RECOVERY = st.none() | RECOVERY
POOL = st.sampled_from(BROKER_POOLS)
LEVEL = st.sampled_from(LEVEL_NAMES)
EPOCH = st.integers(0, 2 ** 31 - 2)


def pick(values: tuple[int, ...], position: int) -> int:
    return values[position % len(values)]


def picks(values: tuple[int, ...], positions: list[int]) -> tuple[int, ...]:
    return tuple(values[i] for i in positions if i < len(values))


def subset_of(pool: tuple[int, ...], bits: int) -> frozenset[int]:
    return frozenset(broker for i, broker in enumerate(pool) if bits >> i & 1)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    pool = draw(POOL)
    replicas = picks(pool, draw(POSITIONS)) or pool[:1]
    level_name = draw(LEVEL)
    elr_possible = BY_NAME[level_name].level >= BY_NAME[ELR_FIRST].level
    elr_enabled = elr_possible and draw(st.booleans())
    isr = picks(replicas, draw(POSITIONS))
    # mostly a leader from the ISR, else none; now and then a replica outside it (a state Kafka can be left in)
    leader = pick(replicas if draw(ONE_IN[10]) == 9 else isr + (-1,), draw(POSITION))
    if draw(ONE_IN[4]) == 3:  # leaderless with an empty ISR, where ELR and the last known leader matter
        isr, leader = (), -1
    out_of_isr = tuple(r for r in replicas if r not in isr)
    elr = picks(out_of_isr, draw(POSITIONS)) if elr_possible and draw(st.booleans()) else ()
    # none, the one last known leader, or (as useLastKnownLeaderInBalancedRecovery=false leaves it) several
    last_known = (((), (pick(replicas, draw(POSITION)),), picks(replicas, draw(POSITIONS)))[draw(ONE_IN[3])]
                  if elr_possible else ())
    in_reassignment = draw(ONE_IN[4]) == 3
    adding = picks(replicas, draw(POSITIONS)) if in_reassignment else ()
    removing = picks(tuple(r for r in replicas if r not in adding), draw(POSITIONS)) if in_reassignment else ()
    directories = tuple(draw(DIRECTORY_ROW)[:len(replicas)]) if draw(st.booleans()) else None
    target_replicas = draw(SOME_POSITIONS)
    target_replicas = None if target_replicas is None else picks(pool, target_replicas) or pool[-1:]
    candidates = tuple(dict.fromkeys(replicas + (target_replicas or ())))

    def target(positions: list[int] | None) -> tuple[int, ...] | None:
        return None if positions is None else picks(candidates, positions)

    def placements() -> tuple[tuple[int, uuid.UUID], ...]:
        return tuple({pick(pool, i): d for i, d in draw(PLACEMENTS)}.items())

    return Case(
        replicas=replicas, isr=isr, leader=leader, metadata_version=level_name, elr_enabled=elr_enabled,
        min_isr=1 + draw(ONE_IN[4]), election=("ONLINE", "UNCLEAN", "PREFERRED")[draw(ONE_IN[3])],
        elr=elr, last_known_elr=last_known, removing=removing, adding=adding, recovery=draw(RECOVERY),
        directories=directories, fenced=subset_of(pool, draw(BITS)), shutting_down=subset_of(pool, draw(BITS)),
        target_isr=target(draw(SOME_POSITIONS)), target_replicas=target_replicas,
        target_removing=target(draw(SOME_POSITIONS)), target_adding=target(draw(SOME_POSITIONS)),
        target_recovery=draw(SOME_RECOVERY),
        # Kafka names one unclean shutdown at most
        unclean_shutdown=(pick(pool, draw(POSITION)),) if draw(st.booleans()) else (),
        target_directories=placements(), default_directories=placements(),
        leader_epoch=draw(EPOCH), partition_epoch=draw(EPOCH), partition_id=draw(EPOCH))


# -- rules kept in sight, and differences found ------------------------------------------------

NAMED = {
    "nothing to change builds no record": Case(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1),
    "a preferred election that keeps the leader builds none": Case(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, target_isr=(1, 2, 3), election="PREFERRED"),
    "ELR comes out in Java's HashSet order": Case(
        replicas=(1001, 17, 65537, 2), isr=(1001, 17, 65537, 2), leader=1001, min_isr=3, target_isr=(1001,)),
    "a leader from ELR only with an empty ISR, and it alone in the ISR": Case(
        replicas=(1, 2, 3), isr=(), leader=-1, elr=(2, 3), last_known_elr=(1,), fenced=frozenset({1, 2}), min_isr=2),
    "ELR waits while an ISR member cannot lead": Case(
        replicas=(1, 2, 3), isr=(1,), leader=-1, elr=(2, 3), fenced=frozenset({1}), min_isr=2),
    "the last known leader is elected only when it may lead (4.1's rule; 4.0 took it anyway)": Case(
        replicas=(1, 2), isr=(), leader=-1, last_known_elr=(1,), fenced=frozenset({1, 2})),
    "the last known leader, when it may lead, is elected uncleanly": Case(
        replicas=(1, 2), isr=(), leader=-1, last_known_elr=(1,), fenced=frozenset({2})),
    "an unclean election takes the first acceptable replica, recovers, and clears ELR": Case(
        replicas=(1, 2, 3, 4), isr=(1,), leader=-1, elr=(2,), fenced=frozenset({1, 2}), min_isr=2, election="UNCLEAN"),
    "an online election never picks outside the ISR and ELR": Case(
        replicas=(1, 2, 3), isr=(1,), leader=-1, elr_enabled=False, fenced=frozenset({1})),
    "a lost leader is kept as the last known one while the ISR is not empty (4.1; 4.0 waited for an empty ISR)": Case(
        replicas=(1, 2, 3), isr=(1, 2), leader=1, fenced=frozenset({1, 2}), min_isr=1),
    "a leaderless partition losing a replica names leader -1 and keeps -1 as its last known leader": Case(
        replicas=(1,), isr=(), leader=-1, target_replicas=(5,)),
    "a reassignment completes and drops its removing replicas": Case(
        replicas=(2, 3, 1), isr=(1, 2), leader=1, removing=(1,), adding=(3,), target_isr=(1, 2, 3)),
    "a replica leaving names the same leader (epoch bump)": Case(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, target_replicas=(1, 2), target_isr=(1, 2)),
    "before 3.6-IV0 an ISR shrink names the same leader; v0 has no directories": Case(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, metadata_version="3.3-IV3", elr_enabled=False,
        target_isr=(1, 2), target_replicas=(1, 2, 3, 4)),
    "from 4.0-IV1 the record is v2, and an ISR shrink no longer names the leader": Case(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, metadata_version="4.0-IV1",
        target_isr=(1, 2), target_replicas=(1, 2, 3, 4)),
    "a reassignment completes once its adding replicas are in sync (4.3, KAFKA-19975; found by the 4.4.0 peer)": Case(
        replicas=(1, 2), isr=(1,), leader=1, metadata_version="4.0-IV1", elr_enabled=False, election="PREFERRED",
        adding=(1,)),
    "a reassignment waits for an adding replica out of sync": Case(
        replicas=(1, 2, 3, 4), isr=(1, 2, 3), leader=1, adding=(4,)),
    "[1, 2, 3] to [2, 3, 4] completes with 2 out of sync (4.3, KAFKA-19975)": Case(
        replicas=(2, 3, 4, 1), isr=(1, 3, 4), leader=1, removing=(1,), adding=(4,)),
    "[1, 2, 3] to [2, 4], a shrink, waits for 2 to be in sync": Case(
        replicas=(2, 4, 1, 3), isr=(1, 3, 4), leader=1, removing=(1, 3), adding=(4,)),
    "from 3.7-IV2 a new replica gets its default directory": Case(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, metadata_version="3.7-IV2", elr_enabled=False,
        target_isr=(1, 2), target_replicas=(1, 2, 3, 4), default_directories=((4, DIR_A),)),
}


@functools.cache
def _kafka_levels(classes: Any) -> dict[str, int]:
    return dict(classes.call("PartitionChange", ask="metadata_versions"))


def completion_rules_differ(case: Case) -> bool:
    """Whether Kafka 4.1's and 4.3's rules for completing a reassignment part on ``case``.

    KAFKA-19975 (Kafka 4.3) completes a reassignment once the adding replicas are in sync
    (and every target replica, when it shrinks the replica set); 4.1 waited for every target
    replica. Ours follows 4.3, so a 4.1 peer is not asked where the two part."""
    removing = case.removing if case.target_removing is None else case.target_removing
    adding = case.adding if case.target_adding is None else case.target_adding
    if not (removing or adding):
        return False
    isr = [r for r in (case.isr if case.target_isr is None else case.target_isr) if r not in removing]
    replicas = [r for r in (case.replicas if case.target_replicas is None else case.target_replicas)
                if r not in removing]
    if removing and not (isr and replicas):
        return False
    all_in_sync = set(replicas) <= set(isr)
    since_4_3 = set(adding) <= set(isr) and (len(adding) >= len(removing) or all_in_sync)
    return all_in_sync != since_4_3


def before_4_3(classes: Any) -> bool:
    return tuple(int(part) for part in classes.version.split(".")[:2]) < (4, 3)


def check_same(classes: Any, case: Case) -> None:
    assume(case.metadata_version in _kafka_levels(classes))
    assume(not (before_4_3(classes) and completion_rules_differ(case)))
    theirs = kafka_builds(classes, case)
    ours = described(case.ours())
    assert ours == theirs, f"Kafka {classes.version} builds {theirs}\n                    ours {ours}"


def test_our_metadata_version_levels_are_kafkas(kafka_classes) -> None:
    levels = _kafka_levels(kafka_classes)
    assert set(LEVEL_NAMES) - set(levels) <= {"4.2-IV1", "4.3-IV0", "4.4-IV2", "4.5-IV0"}
    assert {name: BY_NAME[name].level for name in levels if name in BY_NAME} == {
        name: level for name, level in levels.items() if name in BY_NAME}


def _with_named_examples(test):
    # test_diff_mutants.py turns them off: the random cases alone must find a planted bug
    if os.environ.get("METASHELL_DIFF_NAMED_EXAMPLES", "1") == "0":
        return test
    for case in NAMED.values():
        test = example(case=case)(test)
    return test


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(case=cases())
@_with_named_examples
def test_the_record_is_kafkas(kafka_classes, case: Case) -> None:
    check_same(kafka_classes, case)
