"""The table of what the controller serves: every manager's ``COMMANDS``, by API key."""

from __future__ import annotations

import random
from types import ModuleType, SimpleNamespace
from typing import Any, Callable

from engine.controller import (
    acl_control, client_quota_control, delegation_token_control, cluster_control, config_control, feature_control, producer_id_control,
    reassignment, replication_control, scram_control, topic_control, unclean_recovery,
)
from engine.controller.controller_config import ControllerConfig
from engine.controller.controller_result import Command
from engine.controller.quorum_controller import PeriodicTask
from engine.image.metadata_image import MetadataImage

# Each manager module lists its commands in COMMANDS; import it here and add it to _MANAGERS.
_MANAGERS: tuple[ModuleType, ...] = (
    cluster_control,
    replication_control,
    reassignment,
    topic_control,
    config_control,
    feature_control,
    producer_id_control,
    scram_control,
    client_quota_control,
    acl_control,
    delegation_token_control,
    unclean_recovery,  # KIP-966's unclean recovery: a periodic task, no commands
)


def all_commands() -> dict[int, Command]:
    table: dict[int, Command] = {}
    for manager in _MANAGERS:
        for command in manager.COMMANDS:
            if command.api_key in table:
                raise ValueError(f"api key {command.api_key} served twice")
            table[command.api_key] = command
    return table


def all_periodic() -> list[PeriodicTask]:
    """Every manager's periodic tasks (``PERIODIC``), in the managers' order."""
    return [task for manager in _MANAGERS for task in getattr(manager, "PERIODIC", ())]


def activation_hooks() -> list[Callable[[Any, MetadataImage, int], None]]:
    """Every manager's ``on_activation(soft, image, now_ms)``: soft state reset when a controller
    becomes active (each broker gets a full session from then on, as in Kafka)."""
    return [manager.on_activation for manager in _MANAGERS if hasattr(manager, "on_activation")]


def new_soft_state(config: ControllerConfig, rng: random.Random | None = None) -> SimpleNamespace:
    """The controller's soft state (never in the log): each manager's (``new_soft_state``: broker
    heartbeats, unclean recovery's rounds) merged in one namespace, and the random source for new
    ids (seeded in the simulator)."""
    soft = SimpleNamespace(rng=rng or random.Random())
    for manager in _MANAGERS:
        factory = getattr(manager, "new_soft_state", None)
        if factory is not None:
            for name, value in vars(factory(config)).items():
                setattr(soft, name, value)
    return soft
