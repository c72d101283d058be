"""``summary``: the cluster at a glance, from an image."""

from __future__ import annotations

from collections import Counter

from engine.image.metadata_image import MetadataImage, min_isr
from engine.image.metadata_loader import LoadInfo
from metashell.tree.kafka_names import metadata_version_text


def summarize(image: MetadataImage, info: LoadInfo | None) -> list[str]:
    brokers = image.cluster.brokers
    states = Counter(b.state for b in brokers.values())
    live = {b.id for b in brokers.values() if not b.fenced}
    partitions = leaderless = under_min = with_elr = offline = 0
    for topic in image.topics.by_id.values():
        needed = min_isr(image, topic.name)
        for p in topic.partitions.values():
            partitions += 1
            leaderless += p.leader < 0
            under_min += len(p.isr) < needed
            with_elr += bool(p.elr)
            offline += sum(1 for r in p.replicas if r not in live)
    from metashell.tree.tree_layout import quorum_voters

    leader = image.quorum.leader
    state = info.quorum_state if info else None
    leader_id = leader.leader_id if leader else (state.leader_id if state else None)
    epoch = leader.epoch if leader else (state.leader_epoch if state else None)
    voters = sorted(quorum_voters(image, info))
    level = image.features.get("metadata.version")
    features = ", ".join(f"{k}={v}" for k, v in sorted(image.features.items()) if k != "metadata.version") or "none"
    lines = [
        f"offset:       {image.provenance.last_offset}" + (f" of {info.log_end_offset - 1}" if info else ""),
        f"brokers:      {len(brokers)} ({', '.join(f'{n} {s}' for s, n in sorted(states.items())) or 'none'})",
        f"controllers:  {len(image.cluster.controllers)}",
        f"topics:       {len(image.topics.by_id)}",
        f"partitions:   {partitions}",
        f"leaderless:   {leaderless}",
        f"under min ISR: {under_min}",
        f"with ELR:     {with_elr}",
        f"offline replicas: {offline}",
        f"metadata.version: {metadata_version_text(level) if level is not None else 'none'}",
        f"features:     {features}",
        f"quorum:       leader {leader_id if leader_id is not None else 'unknown'}, "
        f"epoch {epoch if epoch is not None else '-'}, voters {voters or 'unknown'}",
    ]
    return lines
