"""The state a valid metadata log has reached, and the draws that extend it
(metadata_sequences.py draws the logs; test_diff_image_replay.py replays them).

``LogModel`` is what the records said so far, as far as the next valid record depends on it;
``KafkaKnows`` is what the Kafka under test reads. The draws share a few cached integer
strategies: Hypothesis builds and checks a strategy each time one is made, which cost more
than the rest of an example, and a pick drawn as an index shrinks to the first item.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st

from engine.image.metadata_version import BY_LEVEL, record_versions
from engine.records import metadata_records as m

_CLASSES = {(cls.record_name, cls.__version__): cls for cls in m.RECORD_CLASSES.values()}
ELR_FEATURE = "eligible.leader.replicas.version"
# metadata.version levels where records came (Kafka's MetadataVersion)
MV_SCRAM, MV_TRANSACTIONS, MV_TOKENS, MV_CONTROLLERS, MV_ELR = 11, 13, 14, 15, 23
# the levels drawn: 3.3-IV3 up to the newest production level of the newest Kafka we test
LEVELS = tuple(level for level in BY_LEVEL if level <= 33)


@dataclass(frozen=True)
class KafkaKnows:
    """What the Kafka under test knows: its production metadata.version levels (a pre-release
    level of an older Kafka is not the released one) and the highest version of each record."""

    latest_level: int
    record_versions: dict[int, int]  # api key -> highest version

    @classmethod
    def ask(cls, kafka_classes: Any) -> "KafkaKnows":
        told = kafka_classes.call("ImageReplay", describe=True)
        return cls(told["latest_production"], {int(k): v for k, v in told["records"].items()})

    def fits(self, commits: list[list[list[Any]]]) -> bool:
        """Whether every record of the log is one this Kafka reads, at a level it has released."""
        for commit in commits:
            for batch in commit:
                for rec in batch:
                    if self.record_versions.get(rec.api_key, -1) < rec.__version__:
                        return False
                    if rec.record_name == "FeatureLevelRecord" and rec.name == "metadata.version" \
                            and rec.feature_level > self.latest_level:
                        return False
        return True


def record(type_name: str, version: int = 0, /, **fields: Any) -> Any:
    """A metadata record by Kafka's type name and version."""
    return _CLASSES[(type_name, version)](**fields)


@dataclass
class Partition:
    replicas: list[int]
    isr: list[int]
    leader: int


@dataclass
class LogModel:
    """What the log has said so far, as far as the next valid record depends on it."""

    level: int
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, dict] = field(default_factory=dict)  # id -> epoch, fenced
    controllers: set[int] = field(default_factory=set)
    topics: dict[str, uuid.UUID] = field(default_factory=dict)
    partitions: dict[uuid.UUID, dict[int, Partition]] = field(default_factory=dict)
    configs: dict[tuple[int, str], set[str]] = field(default_factory=dict)
    acls: list[uuid.UUID] = field(default_factory=list)
    scram: list[tuple[int, str]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    next_producer_id: int = 0
    counter: int = 0  # for ids never seen before
    transaction: "LogModel | None" = None  # the model as it was at BeginTransactionRecord
    # topics given configs since Kafka's loader last published an image (see delete_topic)
    fresh_configs: set[str] = field(default_factory=set)
    new_commit: bool = False  # the next records must begin a commit

    def fresh(self) -> int:
        self.counter += 1
        return self.counter

    @property
    def versions(self) -> Any:
        return record_versions(self.level)

    @property
    def elr_enabled(self) -> bool:
        return self.features.get(ELR_FEATURE, 0) > 0


Draw = Callable[[st.SearchStrategy], Any]
_INTEGERS: dict[tuple[int, int], st.SearchStrategy[int]] = {}


def integer(draw: Draw, low: int, high: int) -> int:
    strategy = _INTEGERS.get((low, high))
    if strategy is None:
        strategy = _INTEGERS[(low, high)] = st.integers(low, high)
    return draw(strategy)


def boolean(draw: Draw) -> bool:
    return integer(draw, 0, 1) == 1


def pick(draw: Draw, items: Any) -> Any:
    return items[integer(draw, 0, len(items) - 1)]


def some(draw: Draw, items: Any, min_size: int, max_size: int) -> list:
    """Distinct items, in the order drawn."""
    pool = list(items)
    return [pool.pop(integer(draw, 0, len(pool) - 1)) for _ in range(integer(draw, min_size, min(max_size, len(pool))))]


def many(draw: Draw, items: Any, min_size: int, max_size: int) -> list:
    return [pick(draw, items) for _ in range(integer(draw, min_size, max_size))]


def subset(draw: Draw, items: list[int], min_size: int = 0) -> list[int]:
    if not items:
        return []
    return some(draw, items, min_size, len(items))
