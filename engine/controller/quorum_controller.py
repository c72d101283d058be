"""The quorum controller's core: commands in, records and responses out, no I/O.

The active controller is the Raft leader (KIP-631). Every command runs on the speculative
image (the committed image plus the records this leader has appended) and returns a
``ControllerResult``; the core replays its records into the speculative image at once, so
the next command sees them, and keeps the response until the records are committed. When
the leadership goes, the speculative image is dropped for the committed one and every
pending command is answered NOT_CONTROLLER. An immutable image makes that rollback free,
where Kafka needs its timeline data structures.

The core is also a RaftListener. It reads the committed image from the node's metadata
listener (``committed_image``, registered before it), so standbys are always current and a
failover needs no reload. It becomes active only once the first batch of its own epoch is
committed (its LeaderChange), as Kafka's controller claims leadership only after replaying
everything before its epoch: no command may read an image that is still behind the log.

Its edge (``engine.server.controller_server``, or the simulator) calls ``submit`` for a
request and ``poll`` after every Raft event and on the timer, appends what they return
under the leader's epoch and sends the responses they release. ``next_offset`` (the offset
the next appended record will take) comes from the edge: a broker's epoch is the offset of
the first record its registration writes (Kafka's next write offset).
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from engine.common.api_keys import ApiKeys
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import (
    MAX_RECORDS_PER_USER_OP, ApiError, Command, ControllerContext, ControllerResult,
)
from engine.image.metadata_delta import MetadataDelta
from engine.image.metadata_image import MetadataImage
from engine.image.metadata_version import record_versions
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode

log = logging.getLogger("engine.controller")

# the operations MAX_RECORDS_PER_USER_OP bounds (admin requests: topics, partitions, elections,
# reassignments, configs, quotas, SCRAM, ACLs, features)
USER_OPERATIONS = frozenset({
    ApiKeys.CREATE_TOPICS, ApiKeys.DELETE_TOPICS, ApiKeys.CREATE_ACLS, ApiKeys.DELETE_ACLS, ApiKeys.ALTER_CONFIGS,
    ApiKeys.CREATE_PARTITIONS, ApiKeys.ELECT_LEADERS, ApiKeys.INCREMENTAL_ALTER_CONFIGS,
    ApiKeys.ALTER_PARTITION_REASSIGNMENTS, ApiKeys.ALTER_CLIENT_QUOTAS, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS,
    ApiKeys.UPDATE_FEATURES})

# a periodic task: (context) -> result or None; run by poll while active (session expiry, ...)
PeriodicTask = Callable[[ControllerContext], "ControllerResult | None"]


@dataclass(frozen=True, slots=True)
class Append:
    records: tuple[Any, ...]
    atomic: bool


@dataclass
class ControllerOutput:
    """What the edge must do now: append these (in order), send these responses."""

    appends: list[Append] = field(default_factory=list)
    responses: list[tuple[Any, Any]] = field(default_factory=list)  # (token, response)

    def __bool__(self) -> bool:
        return bool(self.appends or self.responses)


@dataclass
class _Pending:
    last_offset: int
    token: Any
    response: Any
    command: Command | None
    request: Any


class QuorumController:
    def __init__(self, config: ControllerConfig, committed_image: Callable[[], MetadataImage],
                 bootstrap_records: Sequence[Any], commands: dict[int, Command],
                 periodic: Sequence[PeriodicTask] = (), soft: Any = None,
                 activation_hooks: Sequence[Callable[[Any, MetadataImage, int], None]] = ()):
        self.config = config
        self.node_id = config.node_id
        self.committed_image = committed_image
        self.bootstrap_records = tuple(r for r in bootstrap_records
                                       if not (getattr(r, "type_name", "") == "FEATURE_LEVEL_RECORD"
                                               and r.name == "kraft.version"))  # KAFKA-18979
        self.commands = commands
        self.periodic = tuple(periodic)
        self.soft = soft
        self.activation_hooks = tuple(activation_hooks)
        self.image = MetadataImage()  # speculative while active; the committed image otherwise
        self.active_epoch: int | None = None
        self.committed_offset = -1
        self._leader_epoch: int | None = None  # an epoch we lead but have not claimed yet
        self._claimable = False
        self._pending: deque[_Pending] = deque()
        self._released: list[tuple[Any, Any]] = []
        self._speculative_offset = -1  # last offset replayed into the speculative image

    # -- RaftListener ------------------------------------------------------------------

    def handle_commit(self, batches: Sequence[Any]) -> None:
        if not batches:
            return
        self.committed_offset = batches[-1].last_offset
        if self._leader_epoch is not None and any(b.epoch >= self._leader_epoch for b in batches):
            self._claimable = True
        while self._pending and self._pending[0].last_offset <= self.committed_offset:
            done = self._pending.popleft()
            self._released.append((done.token, done.response))
        if self.active_epoch is None:
            self.image = self.committed_image()

    def handle_load_snapshot(self, snapshot_id: Any, batches: Sequence[Any]) -> None:
        self.committed_offset = snapshot_id.end_offset - 1
        if self.active_epoch is None:
            self.image = self.committed_image()

    def handle_leader_change(self, leader: Any) -> None:
        if leader.leader_id == self.node_id:
            if self.active_epoch != leader.epoch:
                self._leader_epoch, self._claimable = leader.epoch, False
            return
        self._leader_epoch = None
        self._claimable = False
        if self.active_epoch is not None:
            self.renounce()

    # -- the edge's calls --------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active_epoch is not None

    def context(self, now_ms: int, next_offset: int, principal: str = "User:ANONYMOUS",
                image: MetadataImage | None = None) -> ControllerContext:
        return ControllerContext(image=self.image if image is None else image, now_ms=now_ms,
                                 next_offset=next_offset, config=self.config, principal=principal, soft=self.soft)

    def submit(self, now_ms: int, next_offset: int, api_key: int, request: Any, token: Any,
               principal: str = "User:ANONYMOUS") -> ControllerOutput:
        """One request (at its command's ``max_version``): what to append and, for reads and
        refusals, the response at once; a write's response comes out of a later ``poll``."""
        out = ControllerOutput()
        command = self.commands[api_key]
        if command.read_only:
            # reads answer from what is committed, as Kafka's read events: never state a failover may lose
            image = self.committed_image()
            out.responses.append((token, self._run(command, self.context(now_ms, next_offset, principal, image),
                                                   request).response))
            return out
        if self.active_epoch is None:
            out.responses.append((token, command.error_response(request, ErrorCode.not_controller,
                                                                "this controller is not active")))
            return out
        result = self._run(command, self.context(now_ms, next_offset, principal), request)
        self._write(out, result, next_offset, token, command, request)
        return out

    def poll(self, now_ms: int, next_offset: int) -> ControllerOutput:
        """Claim a leadership once caught up (bootstrapping an empty log), run the periodic
        tasks, and release the responses whose records are committed."""
        out = ControllerOutput()
        if self._claimable and self.active_epoch is None:
            self._claim(out, now_ms, next_offset)
            next_offset += sum(len(a.records) for a in out.appends)
        if self.active_epoch is not None:
            for task in self.periodic:
                try:
                    result = task(self.context(now_ms, next_offset))
                except Exception:  # noqa: BLE001 - as Kafka's controller: a failed event renounces, the node lives
                    log.exception("node %d: a periodic task (%s) failed; renouncing the leadership", self.node_id,
                                  getattr(task, "__name__", task))
                    self.renounce()
                    break
                if result is not None and result.records:
                    self._write(out, result, next_offset, None, None, None)
                    next_offset += len(result.records)
        out.responses.extend(self._released)
        self._released = []
        return out

    def append_failed(self) -> ControllerOutput:
        """The Raft layer refused an append (the leadership is gone): step down now."""
        self.renounce()
        out = ControllerOutput(responses=self._released)
        self._released = []
        return out

    def renounce(self) -> None:
        """Back to the committed image; pending commands are answered NOT_CONTROLLER."""
        self.active_epoch = None
        self.image = self.committed_image()
        self._speculative_offset = -1
        while self._pending:
            p = self._pending.popleft()
            if p.command is not None:
                self._released.append((p.token, p.command.error_response(
                    p.request, ErrorCode.not_controller, "the controller lost its leadership")))

    # -- inside ------------------------------------------------------------------------

    def _claim(self, out: ControllerOutput, now_ms: int, next_offset: int) -> None:
        self.active_epoch, self._leader_epoch, self._claimable = self._leader_epoch, None, False
        self.image = self.committed_image()
        for hook in self.activation_hooks:
            hook(self.soft, self.image, now_ms)
        if self.image.metadata_version is None and self.bootstrap_records:
            self._write(out, ControllerResult(bootstrap_transaction(self.bootstrap_records), None, atomic=True),
                        next_offset, None, None, None)

    def _run(self, command: Command, ctx: ControllerContext, request: Any) -> ControllerResult:
        try:
            result = command.handle(ctx, request)
        except ApiError as err:
            return ControllerResult((), command.error_response(request, err.code, err.message))
        except Exception as err:  # noqa: BLE001 - a bug of ours answers UNKNOWN_SERVER_ERROR, as Kafka's
            log.exception("node %d: %s failed", self.node_id, command.name)
            return ControllerResult((), command.error_response(request, ErrorCode.unknown_server_error,
                                                               f"{type(err).__name__}: {err}"))
        if command.api_key in USER_OPERATIONS and len(result.records) > MAX_RECORDS_PER_USER_OP:
            # Kafka's bounded record lists: an admin operation that would write more fails whole
            return ControllerResult((), command.error_response(request, ErrorCode.policy_violation,
                                                               "Unable to perform excessively large batch operation."))
        return result

    def _write(self, out: ControllerOutput, result: ControllerResult, next_offset: int, token: Any,
               command: Command | None, request: Any) -> None:
        records = tuple(result.records)
        if not records:
            if token is None:
                return
            if self._speculative_offset > self.committed_offset:
                # A write that wrote nothing read the speculative image (a heartbeat told it is
                # unfenced while its unfencing is not yet committed): as Kafka, it is answered only
                # once everything appended before it is committed (a periodic task's or the
                # bootstrap's records too), so no answer states what a failover loses.
                self._pending.append(_Pending(self._speculative_offset, token, result.response, command, request))
            else:
                out.responses.append((token, result.response))
            return
        delta = MetadataDelta(self.image)
        for i, record in enumerate(records):
            delta.replay(record, next_offset + i)
        self.image = delta.apply()
        last_offset = next_offset + len(records) - 1
        self._speculative_offset = last_offset
        out.appends.append(Append(records, result.atomic))
        if token is not None:
            self._pending.append(_Pending(last_offset, token, result.response, command, request))


def bootstrap_transaction(records: Sequence[Any]) -> list[Any]:
    """The bootstrap records as Kafka's controller writes them on an empty log: metadata.version
    first, then the other features and SCRAM, inside one metadata transaction when that
    metadata.version has them (KIP-868)."""
    level = next((r.feature_level for r in records if getattr(r, "type_name", "") == "FEATURE_LEVEL_RECORD"
                  and r.name == "metadata.version"), None)
    if level is None:
        raise ValueError("the bootstrap records have no metadata.version")
    ordered = sorted(records, key=lambda r: not (getattr(r, "type_name", "") == "FEATURE_LEVEL_RECORD"
                                                 and r.name == "metadata.version"))
    if not record_versions(level).metadata_transactions:
        return ordered
    return [m.BeginTransactionRecordV0(name="Bootstrap records"), *ordered, m.EndTransactionRecordV0()]
