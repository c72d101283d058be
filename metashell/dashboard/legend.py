"""What the dashboard's words, flags and markers mean: the legend the help screen (``?``) shows.

Plain data, kept beside the words it explains: every partition flag (model.ALL_FLAGS, shown in
the table as partitions_table.FLAG_WORDS), every broker state marker (brokers_panel.STATE_MARKERS)
and the Controller panel's and the partitions table's terms. The meanings are Kafka's (KIP-966
for the ELR, the controller's metrics for "imbalanced" and "offline").
"""

from __future__ import annotations

from metashell.dashboard.model import (FLAG_ISR_EMPTY_WITH_ELR, FLAG_LEADERLESS, FLAG_REASSIGNING,
                                       FLAG_UNCLEAN_RECOVERY, FLAG_UNDER_MIN_ISR)
from metashell.dashboard.widgets.brokers_panel import STATE_MARKERS
from metashell.dashboard.widgets.partitions_table import FLAG_WORDS

Entry = tuple[str, str]  # the word as shown, what it means

TERMS: tuple[Entry, ...] = (
    ("ISR", "in-sync replicas: caught up with the leader. A write with acks=all needs "
            "min.insync.replicas of them."),
    ("ELR", "eligible leader replicas (KIP-966): replicas that left the ISR while it was below "
            "min.insync.replicas. They hold every committed record, so the controller can elect one "
            "when the ISR is empty."),
    ("last ELR", "last-known ELR (KIP-966): the leader the partition had when its ISR became empty, "
                 "kept for a last-resort election; cleared once the partition has a leader again."),
    ("imbalanced", "partitions whose leader is not their preferred replica (the first of their "
                   "replicas), Kafka's PreferredReplicaImbalanceCount; offline ones count too. A "
                   "preferred leader election (kafka-leader-election) restores them."),
    ("offline", "partitions without a leader (leader -1): no reads, no writes."),
    ("with ELR · with empty ISR", "partitions whose ELR is not empty · whose ISR is empty (KIP-966)."),
    ("fenced (N shut down)", "fenced brokers; N of them got there by a controlled shutdown. Each broker "
                             "is counted once: active, in controlled shutdown or fenced."),
)

FLAG_MEANINGS: dict[str, str] = {
    FLAG_LEADERLESS: "no leader (-1): the partition is offline.",
    FLAG_UNDER_MIN_ISR: "fewer in-sync replicas than min.insync.replicas: acks=all writes fail "
                        "(NOT_ENOUGH_REPLICAS).",
    FLAG_ISR_EMPTY_WITH_ELR: "the ISR is empty but the ELR is not: the next leader comes from the ELR "
                             "as soon as one of its brokers is back.",
    FLAG_REASSIGNING: "replicas being added or removed: a reassignment in progress.",
    FLAG_UNCLEAN_RECOVERY: "the leader was elected uncleanly and is still recovering "
                           "(LeaderRecoveryState RECOVERING): committed records may be lost.",
}

BROKER_STATE_MEANINGS: dict[str, str] = {
    "active": "registered and unfenced: serving.",
    "controlled-shutdown": "unfenced, shutting down cleanly: its leaderships are moving away.",
    "fenced": "fenced: serves nothing (its session expired, or it finished a controlled shutdown).",
    "unregistered": "was registered earlier in the history, is not now.",
}

MARKERS: tuple[Entry, ...] = (
    ("▶ (Events)", "the events of the records applied by the last step."),
    ("★ leader (Quorum)", "the quorum's leader; the header names it too."),
    ("▲ (Charts)", "where the frame shown stands on the time axis."),
    ("… hidden", "columns left out for want of width: a wider terminal shows them."),
)


def legend() -> list[tuple[str, list[Entry]]]:
    """(section, entries): the words, the partition flags, the broker states, the markers."""
    flags = [(FLAG_WORDS.get(flag, flag), f"{FLAG_MEANINGS[flag]} (filter: flag:{flag})") for flag in FLAG_MEANINGS]
    states = [(STATE_MARKERS[state], meaning) for state, meaning in BROKER_STATE_MEANINGS.items()]
    return [("Words", list(TERMS)), ("Partition flags", flags), ("Broker states", states), ("Markers", list(MARKERS))]
