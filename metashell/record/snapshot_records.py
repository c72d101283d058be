"""The control records a snapshot of the recorder's image carries (Kafka: KRaftVersionRecord and
VotersRecord after the SnapshotHeader when kraft.version is 1; nothing for a static quorum)."""

from __future__ import annotations

from engine.image.quorum_image import QuorumImage
from engine.records.kio_codec import KRaftVersionFeature, KRaftVersionRecord, VotersEndpoint, VotersRecord, \
    VotersVoter, i16, i32, u16
from engine.records.metadata_record_serde import ControlRecord, control_record


def kraft_control_records(quorum: QuorumImage) -> list[ControlRecord]:
    if not quorum.kraft_version or quorum.voters is None:
        return []
    voters = VotersRecord(version=i16(0), voters=tuple(
        VotersVoter(voter_id=i32(v.id), voter_directory_id=v.directory_id,
                    endpoints=tuple(VotersEndpoint(name=name, host=host, port=u16(port))
                                    for name, host, port in v.endpoints),
                    k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(v.kraft_version_range[0]),
                                                               max_supported_version=i16(v.kraft_version_range[1])))
        for v in quorum.voters))
    return [control_record(KRaftVersionRecord(version=i16(0), k_raft_version=i16(quorum.kraft_version))),
            control_record(voters)]
