"""Kafka's API keys and DescribeCluster's endpoint types: the numbers a request header and a
DescribeCluster request carry, named as Kafka names them.

One table for the whole engine, so no module writes an API key as a bare number or declares
its own ``ENVELOPE_KEY``. Pure (no kio): the controller's core reads it as well as the network
edge. ``tests/engine/common/test_api_keys.py`` holds it against kio's messages (each request
class's ``__api_key__``, kio's index of names), so a wrong number cannot creep in.
"""

from __future__ import annotations

from enum import IntEnum


class ApiKeys(IntEnum):
    """Kafka's ApiKeys (clients/.../common/protocol/ApiKeys.java): every API's permanent id.

    An IntEnum, so a member is the int on the wire: it compares and hashes as its number (a
    table keyed by members answers a lookup by the header's int). Keys 4-7 are the ZooKeeper
    era's inter-broker APIs Kafka 4 removed; they stay so that the numbers are never reused.
    """

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


# What a broker forwards to the active controller in an Envelope (KIP-590; Kafka's
# ApiKeys.forwardable): the admin writes on topics, configs, ACLs, quotas, SCRAM credentials,
# features, reassignments, elections and delegation tokens, UnregisterBroker, and the quorum's
# admin RPCs (DescribeQuorum and the voter changes).
FORWARDABLE: frozenset[ApiKeys] = frozenset({
    ApiKeys.CREATE_TOPICS, ApiKeys.DELETE_TOPICS, ApiKeys.CREATE_PARTITIONS, ApiKeys.ALTER_CONFIGS,
    ApiKeys.INCREMENTAL_ALTER_CONFIGS, ApiKeys.CREATE_ACLS, ApiKeys.DELETE_ACLS, ApiKeys.ALTER_CLIENT_QUOTAS,
    ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, ApiKeys.UPDATE_FEATURES, ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
    ApiKeys.LIST_PARTITION_REASSIGNMENTS, ApiKeys.ELECT_LEADERS, ApiKeys.CREATE_DELEGATION_TOKEN,
    ApiKeys.RENEW_DELEGATION_TOKEN, ApiKeys.EXPIRE_DELEGATION_TOKEN, ApiKeys.UNREGISTER_BROKER,
    ApiKeys.DESCRIBE_QUORUM, ApiKeys.ADD_RAFT_VOTER, ApiKeys.REMOVE_RAFT_VOTER,
})


class EndpointType(IntEnum):
    """Which listeners a DescribeCluster asks about (KIP-919, Kafka's EndpointType): a broker
    answers for BROKER, a controller for CONTROLLER, and each refuses the other with
    MISMATCHED_ENDPOINT_TYPE."""

    UNKNOWN = 0
    BROKER = 1
    CONTROLLER = 2


__all__ = ["FORWARDABLE", "ApiKeys", "EndpointType"]
