"""The root of the metadata filesystem: our layout beside ``/image``, Kafka's own layout.

Both layouts read the same ``TreeBuilder``; this module joins them, so neither layout module
needs the other.
"""

from __future__ import annotations

from engine.image.metadata_image import MetadataImage
from engine.image.metadata_loader import LoadInfo
from metashell.tree.image_layout import image_dir
from metashell.tree.nodes import DirNode, FileNode, static_dir
from metashell.tree.tree_layout import TreeBuilder


def build_tree(image: MetadataImage, info: LoadInfo | None = None, show_secrets: bool = False) -> DirNode:
    """The root directory over ``image``; every node is built only when it is visited."""
    return tree_root(TreeBuilder(image, info, show_secrets))


def tree_root(tree: TreeBuilder) -> DirNode:
    """The root directory over a builder's image (one ``TreeBuilder.carried`` from the last tree)."""
    return static_dir("", {
        "brokers": tree.brokers, "controllers": tree.controllers, "topics": tree.topics,
        "topic-ids": tree.topic_ids, "quorum": tree.quorum, "features": tree.features,
        "configs": tree.configs, "client-quotas": tree.client_quotas, "acls": tree.acls,
        "scram": tree.scram, "delegation-tokens": tree.delegation_tokens,
        "producer-ids": lambda: FileNode("producer-ids", lambda: tree.image.producer_ids.next_producer_id),
        "local": tree.local, "metrics": tree.metrics,
        "image": lambda: image_dir(tree),
    })
