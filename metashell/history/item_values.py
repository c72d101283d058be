"""A change set's subjects as the tree names and shows them: path, entity and JSON value.

A change item (metashell/history/change_items.py) says which node of the tree changed and what
``cat --json`` showed there before and after; this module holds those renderings, one function
per domain, from the values a change set carries (BrokerRegistration, StandardAcl, ...). They
follow metashell/tree/tree_layout.py: the same directory names, names encoded by
``encode_name``, Kafka's numbers (no enum names), and secrets always redacted (a SCRAM
credential's salt and keys, config values whose names say they are secret): what an item holds
may be written to disk (the history index), so ``--show-secrets`` does not reach it.

A registration (broker, controller) is a directory in the tree; its item's value is one object
of the directory's files (``leader-of``/``replica-of`` excepted: they are the partitions', not
the registration's).
"""

from __future__ import annotations

from typing import Any

from engine.common.config_resource import ConfigResource, config_resource_type_name
from engine.common.kafka_uuid import uuid_to_kafka
from engine.image.change_set import Change
from engine.records.record_json import message_to_jsonable
from metashell.tree.kafka_names import SCRAM_MECHANISMS
from metashell.tree.nodes import DEFAULT_NAME, encode_name
from metashell.tree.tree_layout import REDACTED, is_secret_config, partition_json, quota_entity_name


def _uuid(value: Any) -> str | None:
    return uuid_to_kafka(value) if value is not None else None


def _endpoints(endpoints: Any) -> list[dict]:
    return [{"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
            for e in endpoints]


def _features(features: Any) -> dict:
    return {f.name: [f.min_version, f.max_version] for f in features}


# -- configs and quotas ------------------------------------------------------------------

def config_dir(resource: ConfigResource) -> str:
    """``/configs/TOPIC/orders``: the tree's directory of a resource's configs."""
    name = encode_name(resource.name) if resource.name else DEFAULT_NAME
    return f"/configs/{config_resource_type_name(resource.type)}/{name}"


def config_entity(resource: ConfigResource) -> str:
    """``topic orders``, ``broker 1``, ``broker <default>``."""
    kind = config_resource_type_name(resource.type).lower().replace("_", "-")
    return f"{kind} {resource.name or DEFAULT_NAME}"


def config_value(key: str, value: str | None) -> str | None:
    return REDACTED if value is not None and is_secret_config(key) else value


def quota_dir(entity: Any) -> str:
    return f"/client-quotas/{quota_entity_name(entity)}"


# -- topics and partitions -----------------------------------------------------------------

def topic_json(topic_id: Any, name: str | None) -> dict | None:
    """A topic's identity: a topic deleted and another created with the same name differ here."""
    return None if name is None else {"id": uuid_to_kafka(topic_id), "name": name}


class PartitionValues:
    """Partition JSON, each registration rendered once: a change's value before is the one the
    previous change left (the same object), so the last rendering per partition is kept. The
    values are shared: a reader never changes them."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[tuple, tuple[Any, dict]] = {}  # (topic id, partition) -> (registration, its JSON)

    def __call__(self, topic_id: Any, partition_id: int, registration: Any) -> dict | None:
        if registration is None:
            return None
        key = (topic_id, partition_id)
        last = self._last.get(key)
        if last is not None and last[0] is registration:
            return last[1]
        value = partition_json(topic_id, partition_id, registration)
        self._last[key] = (registration, value)
        return value


# -- the cluster's members -------------------------------------------------------------------

def broker_json(b: Any) -> dict | None:
    """A broker registration as the files of /brokers/<id>/ show it."""
    if b is None:
        return None
    return {"id": b.id, "epoch": b.epoch, "incarnation-id": _uuid(b.incarnation_id), "state": b.state,
            "fenced": b.fenced, "in-controlled-shutdown": b.in_controlled_shutdown, "rack": b.rack,
            "endpoints": _endpoints(b.endpoints), "features": _features(b.supported_features),
            "directories": [_uuid(d) for d in b.directories],
            "cordoned-directories": (None if b.cordoned_directories is None
                                     else [_uuid(d) for d in b.cordoned_directories])}


def controller_json(c: Any) -> dict | None:
    """A controller registration as the files of /controllers/<id>/ show it."""
    if c is None:
        return None
    return {"id": c.id, "incarnation-id": _uuid(c.incarnation_id), "zk-migration-ready": c.zk_migration_ready,
            "endpoints": _endpoints(c.endpoints), "features": _features(c.supported_features)}


def broker_event(change: Change) -> str:
    """How a broker registration changed, as an operator names it."""
    before, after = change.before, change.after
    if after is None:
        return "unregister"
    if before is None or before.epoch != after.epoch:
        return "register"
    if after.in_controlled_shutdown and not before.in_controlled_shutdown:
        return "controlled_shutdown"
    if after.fenced != before.fenced:
        return "fence" if after.fenced else "unfence"
    if set(after.cordoned_directories or ()) != set(before.cordoned_directories or ()):
        return "cordon"
    return "change"


def voter_json(voter: Any) -> dict:
    """A voter as the files of /quorum/voters/<id>/ show it (source: the log's VotersRecord)."""
    return {"id": voter.id, "directory-id": _uuid(voter.directory_id),
            "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in voter.endpoints]}


# -- security ------------------------------------------------------------------------------------

def acl_json(acl_id: Any, acl: Any) -> dict | None:
    return None if acl is None else message_to_jsonable(acl.to_record(acl_id))


def scram_mechanism(mechanism: int) -> str:
    return SCRAM_MECHANISMS.get(mechanism, str(mechanism))


def scram_json(mechanism: int, user: str, credential: Any) -> dict | None:
    """The credential as ``cat --json`` shows it without --show-secrets: salt and keys redacted."""
    if credential is None:
        return None
    data = message_to_jsonable(credential.to_record(mechanism, user))
    return {**data, "salt": REDACTED, "storedKey": REDACTED, "serverKey": REDACTED}


def token_json(token: Any) -> dict | None:
    return None if token is None else message_to_jsonable(token.to_record())


def changed_fields(old: Any, new: Any) -> tuple[str, ...]:
    """The keys of two JSON objects whose values differ (in ``new``'s order, then ``old``'s); ()
    unless both are objects."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ()
    keys = [*new, *(k for k in old if k not in new)]
    return tuple(k for k in keys if old.get(k) != new.get(k))
