"""java.util.Random's generator, and the two orders of Java's that decide where Kafka's randomness
lands: Collections.shuffle and a HashMap's iteration order.

Kafka's StripedReplicaPlacer draws from a java.util.Random; with the same seed, the same draws in
the same order give the same placements, so the placer can be compared with Kafka's own, not
merely resembled. The generator is the 48-bit linear congruential one the Random javadoc
specifies (seed scrambled with 0x5DEECE66D, next(31) the top bits), and nextInt(bound) rejects
the top sliver of the range as Java does, so draws are uniform and bit-exact.
"""

from __future__ import annotations

from typing import Hashable, Iterable, MutableSequence, TypeVar

_MULTIPLIER = 0x5DEECE66D
_ADDEND = 0xB
_MASK = (1 << 48) - 1
_INT_MAX = (1 << 31) - 1

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


class JavaRandom:
    """``new java.util.Random(seed)``: ``next_int(bound)`` and ``shuffle(items)`` draw exactly what
    Java's nextInt and Collections.shuffle draw, in the same order."""

    def __init__(self, seed: int):
        self._seed = (seed ^ _MULTIPLIER) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULTIPLIER + _ADDEND) & _MASK
        return self._seed >> (48 - bits)

    def next_int(self, bound: int) -> int:
        """A uniform int in [0, bound); ValueError for a bound ≤ 0, as Java throws."""
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        r = self._next(31)
        if bound & (bound - 1) == 0:  # a power of two: the high bits, no rejection
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + bound - 1 <= _INT_MAX:  # Java's int overflow test: reject the partial top range
                return r
            u = self._next(31)

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Collections.shuffle(list, random) for a random-access list: swap from the end down."""
        for i in range(len(items), 1, -1):
            j = self.next_int(i)
            items[i - 1], items[j] = items[j], items[i - 1]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def java_string_hash(text: str) -> int:
    """String.hashCode: over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def optional_string_hash(text: str | None) -> int:
    """Optional<String>.hashCode: the string's, 0 when empty (None)."""
    return 0 if text is None else java_string_hash(text)


def hash_map_order(keys: Iterable[K], hash_code=optional_string_hash) -> list[K]:
    """The order a java.util.HashMap, filled with ``keys`` in this order (duplicates ignored) and
    never removed from, iterates them: by bucket of the spread hash at the final table size, each
    bucket in insertion order (a resize splits buckets keeping that order).

    A ninth key in one bucket makes Java grow the table early (or, from 64 buckets, turn the
    bucket into a tree); such a pile-up of colliding hashes is not reproduced here.
    """
    unique = list(dict.fromkeys(keys))
    capacity = 16
    while len(unique) > capacity * 3 // 4:  # load factor 0.75: Java doubles past this many entries
        capacity *= 2

    def bucket(key: K) -> int:
        h = hash_code(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=bucket)  # sorted() is stable: insertion order within a bucket


__all__ = ["JavaRandom", "hash_map_order", "java_string_hash", "optional_string_hash"]
