"""The metadata image: the whole cluster state at one offset, immutable.

One ``MetadataImage``, shared by the controller, the brokers, the shell and the dashboard, made
of one image per domain as Kafka's (metadata/image): features, cluster, topics, configs, client
quotas, producer ids, ACLs, SCRAM credentials, delegation tokens, and the quorum as the log
tells it. It changes only by replaying records through a ``MetadataDelta``
(engine/image/metadata_delta.py), which dispatches each record to its domain's delta and yields
the next image: a domain no record touched is the same object in the next image, and so is a
topic. Nothing here is mutated after build.

The domain images are importable from here too, for readers of the image.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from engine.common.config_resource import BROKER_DEFAULT, topic_resource
from engine.image.acls_image import AclsImage, StandardAcl
from engine.image.broker_registration import BrokerRegistration, ControllerRegistration, Endpoint, FeatureRange
from engine.image.client_quotas_image import ClientQuotaEntity, ClientQuotaImage, ClientQuotasImage
from engine.image.cluster_image import ClusterImage
from engine.image.configurations_image import ConfigurationImage, ConfigurationsImage
from engine.image.delegation_token_image import DelegationTokenData, DelegationTokenImage
from engine.image.features_image import FeaturesImage
from engine.image.producer_ids_image import ProducerIdsImage
from engine.image.quorum_image import LeaderChange, LeaderChanges, QuorumImage, Voter
from engine.image.scram_image import ScramCredentialData, ScramImage
from engine.image.topics_image import TopicImage, TopicsImage


class Provenance(NamedTuple):
    """Where the image stands in the log."""

    last_offset: int = -1
    last_epoch: int = -1
    last_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MetadataImage:
    provenance: Provenance = Provenance()
    features: FeaturesImage = field(default_factory=lambda: FeaturesImage.EMPTY)  # metadata.version included
    cluster: ClusterImage = field(default_factory=lambda: ClusterImage.EMPTY)
    topics: TopicsImage = field(default_factory=lambda: TopicsImage.EMPTY)
    configs: ConfigurationsImage = field(default_factory=lambda: ConfigurationsImage.EMPTY)
    client_quotas: ClientQuotasImage = field(default_factory=lambda: ClientQuotasImage.EMPTY)
    producer_ids: ProducerIdsImage = field(default_factory=lambda: ProducerIdsImage.EMPTY)
    acls: AclsImage = field(default_factory=lambda: AclsImage.EMPTY)
    scram: ScramImage = field(default_factory=lambda: ScramImage.EMPTY)
    delegation_tokens: DelegationTokenImage = field(default_factory=lambda: DelegationTokenImage.EMPTY)
    quorum: QuorumImage = field(default_factory=lambda: QuorumImage.EMPTY)
    EMPTY: ClassVar["MetadataImage"]

    @property
    def metadata_version(self) -> int | None:
        return self.features.metadata_version

    @property
    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.by_id.values())


EMPTY_IMAGE = MetadataImage.EMPTY = MetadataImage()


def min_isr(image: MetadataImage, topic: str) -> int:
    """min.insync.replicas of a topic: its own config, else the cluster default, else Kafka's default of 1."""
    for resource in (topic_resource(topic), BROKER_DEFAULT):
        value = image.configs.config_map(resource).get("min.insync.replicas")
        if value is not None and value.isdigit():
            return int(value)
    return 1


__all__ = ["EMPTY_IMAGE", "AclsImage", "BrokerRegistration", "ClientQuotaEntity", "ClientQuotaImage",
           "ClientQuotasImage", "ClusterImage", "ConfigurationImage", "ConfigurationsImage", "ControllerRegistration",
           "DelegationTokenData", "DelegationTokenImage", "Endpoint", "FeatureRange", "FeaturesImage", "LeaderChange",
           "LeaderChanges", "MetadataImage", "ProducerIdsImage", "Provenance", "QuorumImage", "ScramCredentialData",
           "ScramImage", "StandardAcl", "TopicImage", "TopicsImage", "Voter", "min_isr"]
