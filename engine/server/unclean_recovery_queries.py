"""The edge of KIP-966's unclean recovery: ask the brokers, hand the answers to the core.

The core (``engine.controller.unclean_recovery``) leaves its questions (``LogQuery``) in the
active controller's soft state; after every poll the controller server calls ``send_pending``
and this module asks each broker, in two requests per broker, for the log end of each
partition asked about. Kafka 4.x brokers serve no GetReplicaLogInfo (the KIP's RPC was never
built), so the questions are put with what a real broker does serve:

1. ListOffsets (api key 2, v7) with ``replica_id`` -2 (Kafka's DEBUGGING_REPLICA_ID: a
   follower answers too, not only a leader, and reads to its log end, past the high
   watermark), timestamp -1 (latest), ``current_leader_epoch`` the partition's leader epoch in
   our image. The broker refuses (FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH) when its
   metadata holds another epoch, and otherwise answers its log end offset and the partition's
   leader epoch as its metadata holds it: NOT the epoch of its last record (Kafka's Partition
   answers its current leader epoch for "latest"; seen on Kafka 4.3.1: two replicas whose
   last records have epochs 0 and 1 both answer 2). That epoch is the KIP's "current partition
   leader epoch in the metadata cache", which fences stale answers.
2. ListOffsets again, timestamp -3 (MAX_TIMESTAMP, KIP-734): the newest record by timestamp
   and its leader epoch. For a log whose timestamps grow (producers' CreateTime, or
   LogAppendTime) that is the epoch of its last record, the KIP's "partition leader epoch in
   the log". Kafka 4.x gives a follower's last epoch no exact way: OffsetsForLeaderEpoch is
   served by the leader only, and a debugging Fetch stops at the high watermark (seen: an
   empty answer from a replica holding 30 records behind a high watermark of 0).

An answer goes to the core with the broker epoch we asked at; a failure gives no answer (the
core asks again later).

Which of a broker's registered listeners is asked, and how: the controller config's
``inter.broker.listener.name`` (Kafka's name for the listener brokers reach each other on; a
combined node has it anyway), secured as that listener asks (``listener.security.protocol.map``,
``sasl.mechanism.inter.broker.protocol``, ``listener.name.<l>.<mechanism>.sasl.jaas.config``,
``ssl.*``), so the controller logs in as a broker would. Without it, a listener whose protocol is
PLAINTEXT.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any, Callable

from engine.controller.unclean_recovery import LogInfo, LogQuery
from engine.net.channel_security import PLAINTEXT_CLIENT, ClientSecurity
from engine.net.errors import NetError
from engine.net.kafka_client import KafkaClient
from engine.records.kio_codec import ErrorCode, i8, i32, i64, protocol_module

log = logging.getLogger("engine.server.unclean_recovery")

DEBUGGING_REPLICA_ID = -2  # Kafka's ListOffsetsRequest.DEBUGGING_REPLICA_ID
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3  # (ListOffsets v7+) the newest record by timestamp, with its leader epoch
PLAINTEXT = 0  # security protocol id
QUERY_TIMEOUT_MS = 5000
_LIST_OFFSETS_VERSION = 7  # the first with MAX_TIMESTAMP (KIP-734)


class UncleanRecoveryQueries:
    """Sends the core's questions to the brokers; answers go back through its soft state and
    ``on_answers`` (the controller server's pump: the core decides at once)."""

    def __init__(self, core: Callable[[], Any], on_answers: Callable[[], None],
                 client: KafkaClient | None = None, timeout_ms: int = QUERY_TIMEOUT_MS, *,
                 listener: str | None = None, security: ClientSecurity | None = PLAINTEXT_CLIENT,
                 problem: str | None = None):
        self.core = core
        self.on_answers = on_answers
        self.client = client
        self.timeout_ms = timeout_ms
        self.listener = listener  # the brokers' listener to ask (None: one whose protocol is PLAINTEXT)
        self.security = security  # None: the brokers cannot be asked, for ``problem``
        self.problem = problem
        self._told = False
        self._tasks: set[asyncio.Task] = set()

    def send_pending(self) -> None:
        """Take the core's questions (only an active core has any) and send them, per broker."""
        core = self.core()
        state = getattr(core.soft, "unclean_recovery", None)
        if state is None or not core.is_active:
            return
        queries = state.take_queries()
        if not queries:
            return
        if self.security is None:
            if not self._told:  # once: the questions come back every round
                log.warning("unclean recovery cannot ask the brokers: %s", self.problem)
                self._told = True
            return
        by_broker: dict[int, list[LogQuery]] = defaultdict(list)
        for query in queries:
            by_broker[query.broker_id].append(query)
        for broker_id, asked in by_broker.items():
            address = broker_address(core.image, broker_id, self.listener)
            if address is None:
                log.info("unclean recovery: broker %d has no %s listener to ask", broker_id,
                         self.listener or "PLAINTEXT")
                continue
            task = asyncio.get_running_loop().create_task(self._ask(state, address, asked))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _ask(self, state: Any, address: tuple[str, int], queries: list[LogQuery]) -> None:
        if self.client is None:
            self.client = KafkaClient(client_id="kraftd-unclean-recovery", request_timeout_ms=self.timeout_ms,
                                      security=self.security)
        try:
            answers = await ask_broker(self.client, address, queries, self.timeout_ms)
        except (NetError, OSError) as err:
            log.info("unclean recovery: %s:%d did not answer: %s", *address, err)
            return
        except Exception:  # noqa: BLE001 - an unreadable answer is no answer; the round asks again
            log.exception("unclean recovery: the answer of %s:%d could not be read", *address)
            return
        core = self.core()
        if answers and core.is_active and getattr(core.soft, "unclean_recovery", None) is state:
            state.add_answers(answers)
            self.on_answers()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.client is not None:
            await self.client.close()


def broker_address(image: Any, broker_id: int, listener: str | None = None) -> tuple[str, int] | None:
    """The registered endpoint of ``broker_id`` named ``listener`` (case as Kafka's ListenerName:
    upper), or without one the first whose protocol is PLAINTEXT."""
    broker = image.cluster.brokers.get(broker_id)
    if broker is None:
        return None
    if listener:
        endpoint = next((e for e in broker.endpoints if e.name.upper() == listener.upper()), None)
    else:
        endpoint = next((e for e in broker.endpoints if e.security_protocol == PLAINTEXT), None)
    return None if endpoint is None else (endpoint.host, endpoint.port)


async def ask_broker(client: KafkaClient, address: tuple[str, int], queries: list[LogQuery],
                     timeout_ms: int = QUERY_TIMEOUT_MS) -> list[LogInfo]:
    """One broker's answers: its log end per partition (latest), then the epoch of its newest
    record (max timestamp). A partition it refuses in either gets no answer."""
    ends = await list_offsets(client, address, queries, LATEST_TIMESTAMP, timeout_ms)
    newest = await list_offsets(client, address, list(ends), MAX_TIMESTAMP, timeout_ms) if ends else {}
    answers = []
    for query, (end, leader_epoch) in ends.items():
        if query not in newest:
            continue
        last_epoch = newest[query][1] if end > 0 else -1
        answers.append(LogInfo(query.topic_id, query.partition_id, query.broker_id, query.broker_epoch,
                               leader_epoch, last_epoch, end))
    return answers


async def list_offsets(client: KafkaClient, address: tuple[str, int], queries: list[LogQuery], timestamp: int,
                       timeout_ms: int = QUERY_TIMEOUT_MS) -> dict[LogQuery, tuple[int, int]]:
    """query -> (offset, leader epoch) the broker answers for ``timestamp`` as a debugging
    replica, fenced by the query's partition leader epoch (a refusal gives no entry)."""
    mod = protocol_module("list_offsets", _LIST_OFFSETS_VERSION, "request")
    by_topic: dict[str, list[LogQuery]] = defaultdict(list)
    for q in queries:
        by_topic[q.topic_name].append(q)
    request = mod.ListOffsetsRequest(
        replica_id=i32(DEBUGGING_REPLICA_ID), isolation_level=i8(0),
        topics=tuple(mod.ListOffsetsTopic(name=name, partitions=tuple(
            mod.ListOffsetsPartition(partition_index=i32(q.partition_id), current_leader_epoch=i32(q.leader_epoch),
                                     timestamp=i64(timestamp)) for q in qs))
                     for name, qs in by_topic.items()))
    response = await client.send(address, request, timeout_ms, adapt=True)
    found = {}
    for topic in response.topics:
        for p in topic.partitions:
            query = next((q for q in by_topic.get(topic.name, ()) if q.partition_id == p.partition_index), None)
            if query is None:
                continue
            if p.error_code != ErrorCode.none:
                log.info("unclean recovery: broker %d on %s-%d: %s", query.broker_id, topic.name,
                         p.partition_index, getattr(p.error_code, "name", p.error_code))
                continue
            found[query] = (int(p.offset), int(p.leader_epoch))
    return found


__all__ = ["UncleanRecoveryQueries", "ask_broker", "broker_address", "list_offsets"]
