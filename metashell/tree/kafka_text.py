"""The text ``kafka-metadata-shell`` prints for each leaf of ``/image``: Kafka's objects'
``toString()``, written out from the image's values.

The forms are facts read off Kafka 4.3.1 (its classes' string templates and its shell's node
classes): ``BrokerRegistration(id=1, ...)`` with its listeners and features sorted by name and
its directories by Kafka's Uuid order; the records' ``StandardAcl[...]``; ``VersionRange``'s
``1``, ``1+`` or ``1-20``; Java's ``Optional``, ``Arrays.toString`` and ``Double.toString``;
the provenance's ISO zoned time. Kafka 4.4.0's classes print the same (its shell is not on
Maven Central yet); Kafka 4.1 prints the same but for a broker's ``cordonedDirectories``
(KIP-1066, new in 4.3) and ``StandardAcl(...)`` (a record since); docs/shell.md lists what
differs between releases.

Names sort as Java's ``String.compareTo`` sorts them (by UTF-16 code unit), which is how Kafka's
shell orders ``ls``, ``find`` and ``tree``: ``10`` before ``2``, capitals before lower case.
"""

from __future__ import annotations

import re
import uuid
from typing import Any, Iterable

from engine.common.kafka_uuid import uuid_to_kafka
from engine.controller.config_defs import java_double
from metashell.tree.kafka_names import (ACL_OPERATIONS, ACL_PATTERN_TYPES, ACL_PERMISSIONS, ACL_RESOURCE_TYPES,
                                        LEADER_RECOVERY_STATES, SECURITY_PROTOCOLS)

_SHORT_MAX = 32767
REDACTED = "[redacted]"  # what Kafka's printers show for a secret they hide


def java_order(name: str) -> bytes:
    """A sort key that orders names as Java's ``String.compareTo``: by UTF-16 code unit."""
    return name.encode("utf-16-be", "surrogatepass")


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_int(text: str) -> int | None:
    """The int Java's ``Integer.parseInt`` reads in ``text`` (``01`` and ``+1`` are 1), or None
    where it throws: how Kafka's shell opens a broker, controller or partition by name."""
    if not _JAVA_INT.fullmatch(text):
        return None
    number = int(text)
    return number if -(1 << 31) <= number < 1 << 31 else None


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def optional(value: Any) -> str:
    """Java's ``Optional.toString``."""
    return "Optional.empty" if value is None else f"Optional[{value}]"


def int_list(values: Iterable[int]) -> str:
    """``Arrays.toString`` of an int array, or a List's toString: ``[1, 2]``."""
    return "[" + ", ".join(map(str, values)) + "]"


def uuid_list(values: Iterable[uuid.UUID | None]) -> str:
    return "[" + ", ".join(uuid_to_kafka(v) for v in values) + "]"


def _signed(bits: int) -> int:
    return bits - (1 << 64) if bits >= 1 << 63 else bits


def kafka_uuid_order(value: uuid.UUID | None) -> tuple[int, int]:
    """Kafka's ``Uuid.compareTo``: the most then the least significant 64 bits, as signed longs."""
    number = (value or uuid.UUID(int=0)).int
    return _signed(number >> 64), _signed(number & ((1 << 64) - 1))


def version_range(low: int, high: int) -> str:
    """Kafka's ``VersionRange.toString``."""
    if low == high:
        return str(low)
    return f"{low}+" if high == _SHORT_MAX else f"{low}-{high}"


def _endpoints(endpoints: Iterable[Any]) -> str:
    # BrokerRegistration keeps them in a map by listener name and prints them sorted by it
    by_name = {e.name: e for e in endpoints}
    return ", ".join(
        f"Endpoint(listenerName='{e.name}', securityProtocol={SECURITY_PROTOCOLS.get(e.security_protocol)}, "
        f"host='{e.host}', port={e.port})" for _, e in sorted(by_name.items(), key=lambda item: java_order(item[0])))


def _features(features: Iterable[Any]) -> str:
    by_name = {f.name: f for f in features}
    return ", ".join(f"{name}: {version_range(f.min_version, f.max_version)}"
                     for name, f in sorted(by_name.items(), key=lambda item: java_order(item[0])))


def broker_text(b: Any) -> str:
    """``BrokerRegistration.toString()`` of Kafka 4.3 (directories sorted; cordoned ones as recorded)."""
    directories = sorted(b.directories, key=kafka_uuid_order)
    cordoned = "null" if b.cordoned_directories is None else uuid_list(b.cordoned_directories)
    return (f"BrokerRegistration(id={b.id}, epoch={b.epoch}, incarnationId={uuid_to_kafka(b.incarnation_id)}, "
            f"listeners=[{_endpoints(b.endpoints)}], supportedFeatures={{{_features(b.supported_features)}}}, "
            f"rack={optional(b.rack)}, fenced={java_bool(b.fenced)}, "
            f"inControlledShutdown={java_bool(b.in_controlled_shutdown)}, "
            f"isMigratingZkBroker={java_bool(b.is_migrating_zk_broker)}, directories={uuid_list(directories)}, "
            f"cordonedDirectories={cordoned})")


def controller_text(c: Any) -> str:
    """``ControllerRegistration.toString()``."""
    return (f"ControllerRegistration(id={c.id}, incarnationId={uuid_to_kafka(c.incarnation_id)}, "
            f"zkMigrationReady={java_bool(c.zk_migration_ready)}, listeners=[{_endpoints(c.endpoints)}], "
            f"supportedFeatures={{{_features(c.supported_features)}}})")


def partition_text(p: Any) -> str:
    """``PartitionRegistration.toString()``."""
    state = LEADER_RECOVERY_STATES.get(p.leader_recovery_state, p.leader_recovery_state)
    return (f"PartitionRegistration(replicas={int_list(p.replicas)}, directories={uuid_list(p.directories)}, "
            f"isr={int_list(p.isr)}, removingReplicas={int_list(p.removing_replicas)}, "
            f"addingReplicas={int_list(p.adding_replicas)}, elr={int_list(p.elr)}, "
            f"lastKnownElr={int_list(p.last_known_elr)}, leader={p.leader}, leaderRecoveryState={state}, "
            f"leaderEpoch={p.leader_epoch}, partitionEpoch={p.partition_epoch})")


def acl_text(acl: Any) -> str:
    """The record ``StandardAcl``'s toString; a code Kafka does not know reads as its UNKNOWN."""
    return (f"StandardAcl[resourceType={ACL_RESOURCE_TYPES.get(acl.resource_type, 'UNKNOWN')}, "
            f"resourceName={acl.resource_name}, patternType={ACL_PATTERN_TYPES.get(acl.pattern_type, 'UNKNOWN')}, "
            f"principal={acl.principal}, host={acl.host}, "
            f"operation={ACL_OPERATIONS.get(acl.operation, 'UNKNOWN')}, "
            f"permissionType={ACL_PERMISSIONS.get(acl.permission_type, 'UNKNOWN')}]")


def scram_text(credential: Any, redact: bool) -> str:
    """ScramCredentialDataNode's text: salt and keys in hex, or every field redacted as Kafka's
    strict printer redacts them."""
    def shown(text: str) -> str:
        return REDACTED if redact else text
    return (f"ScramCredentialData(salt={shown(credential.salt.hex())}, storedKey={shown(credential.stored_key.hex())}, "
            f"serverKey={shown(credential.server_key.hex())}, iterations={shown(str(credential.iterations))})")


def token_text(token: Any) -> str:
    """DelegationTokenDataNode's text, its unbalanced parentheses as Kafka prints them."""
    return (f"DelegationTokenDatatokenId={token.token_id}(owner={token.owner}(tokenRequester={token.requester}"
            f"(renewers={' '.join(token.renewers)}, issueTimestamp={token.issue_timestamp}, "
            f"maxTimestamp={token.max_timestamp}), expiryTimestamp={token.expiration_timestamp}")


def quota_text(value: float) -> str:
    return java_double(float(value))


def metadata_version_text(name: str | None) -> str:
    """``FeaturesImage.metadataVersion()``, an Optional since Kafka 4.0."""
    return optional(name)


def provenance_text(offset: int, epoch: int, time_ms: int) -> str:
    """ProvenanceNode's text: ``offset 6, epoch 23, time 2025-02-09T06:32:39.312Z[UTC]``."""
    return f"offset {offset}, epoch {epoch}, time {iso_zoned_utc(time_ms)}"


def iso_zoned_utc(time_ms: int) -> str:
    """Java's ``ISO_ZONED_DATE_TIME`` of an epoch millisecond in zone UTC: seconds always, the
    fraction without trailing zeros (none at all when zero), years past 9999 with a ``+``."""
    days, ms = divmod(time_ms, 86_400_000)
    year, month, day = _civil_from_days(days)
    seconds, millis = divmod(ms, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    fraction = f".{millis:03d}".rstrip("0") if millis else ""
    year_text = f"{year:04d}" if 0 <= year <= 9999 else (f"+{year}" if year > 0 else f"-{-year:04d}")
    return f"{year_text}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}{fraction}Z[UTC]"


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) of a day count from 1970-01-01, any year
    (Python's datetime stops at year 1 and 9999, Java's does not)."""
    days += 719_468
    era = days // 146_097
    day_of_era = days - era * 146_097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day
