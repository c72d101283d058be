"""The read-only mapping a per-domain image is: its subjects by key, as Kafka's image keeps them.

``image.configs`` is a ConfigurationsImage and reads as the mapping of resources to their
configs, ``image.acls`` as ACL ids to their bindings, and so on; a reader writes
``image.configs.get(resource, {})`` or ``len(image.acls)`` and needs no second accessor. An image
equals another image of its class with the same entries, and any mapping with the same items
(``image.acls == {}``). Nothing here changes once built: deltas make new images.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Iterator, Mapping, TypeVar

K = TypeVar("K")
V = TypeVar("V")

EMPTY_MAP: Mapping = MappingProxyType({})


class ImageMap(Mapping[K, V]):
    """A read-only mapping over ``entries`` (kept as given: pass a MappingProxyType or a dict
    no one else holds). The lookups delegate to it directly: images are read on hot paths."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[K, V] = EMPTY_MAP) -> None:
        object.__setattr__(self, "_entries", entries)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __getitem__(self, key: K) -> V:
        return self._entries[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._entries.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self):
        return self._entries.keys()

    def items(self):
        return self._entries.items()

    def values(self):
        return self._entries.values()

    def _same_extras(self, other: "ImageMap") -> bool:
        """Whether the state a subclass keeps beside its entries is equal (none here)."""
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ImageMap):
            return type(other) is type(self) and self._entries == other._entries and self._same_extras(other)
        if isinstance(other, dict):
            return self._entries == other
        if isinstance(other, Mapping):
            return dict(self._entries) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, which are unhashable

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._entries)!r})"


__all__ = ["EMPTY_MAP", "ImageMap"]
