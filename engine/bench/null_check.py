"""What the frame decoder's null check (engine.net.null_fields) costs beside the decode it
follows, on one large response: ``python -m engine.bench.null_check [--partitions N]``."""

from __future__ import annotations

import argparse
import datetime
import time
import uuid
from typing import Any, Callable

from engine.net.kafka_protocol import encode_entity
from engine.net.null_fields import first_null
from engine.records.bounds_check import decode_entity
from engine.records.kio_codec import ErrorCode, i32, protocol_module

_METADATA = protocol_module("metadata", 12, "response")
PARTITIONS_PER_TOPIC = 100


def metadata_response(partitions: int) -> Any:
    """A Metadata response of ``partitions`` partitions (three replicas, two in sync), 100 a topic."""
    m = _METADATA
    parts = tuple(m.MetadataResponsePartition(
        error_code=ErrorCode.none, partition_index=i32(p), leader_id=i32(1), leader_epoch=i32(0),
        replica_nodes=(i32(1), i32(2), i32(3)), isr_nodes=(i32(1), i32(2)), offline_replicas=())
        for p in range(PARTITIONS_PER_TOPIC))
    topics = tuple(m.MetadataResponseTopic(error_code=ErrorCode.none, name=f"t{t}", topic_id=uuid.uuid4(),
                                           is_internal=False, partitions=parts, topic_authorized_operations=i32(0))
                   for t in range(max(1, partitions // PARTITIONS_PER_TOPIC)))
    return m.MetadataResponse(throttle_time=datetime.timedelta(0), brokers=(), cluster_id="bench",
                              controller_id=i32(1), topics=topics)


def best_s(work: Callable[[], Any], rounds: int = 7) -> float:
    """The fastest of ``rounds`` runs: the cost without the machine's noise."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.bench.null_check", description=__doc__)
    parser.add_argument("--partitions", type=int, default=10_000)
    args = parser.parse_args(argv)
    message = metadata_response(args.partitions)
    data = encode_entity(message)
    decoded, _ = decode_entity(type(message), data, 0)
    decode_s = best_s(lambda: decode_entity(type(message), data, 0))
    check_s = best_s(lambda: first_null(decoded))
    print(f"Metadata response, {args.partitions:,} partitions: decode {decode_s * 1e3:.1f} ms, "
          f"null check {check_s * 1e3:.1f} ms ({check_s / decode_s:.0%} of the decode)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
