"""The controller's metrics for the frame on screen (Kafka's kafka.controller:type=KafkaController).

Five fixed lines — who is the active controller, broker states (each broker once: active, fenced
or in controlled shutdown), partition health, the KIP-966 counts, the last record applied — computed by engine.controller.controller_metrics from the
frame's image, so they follow time travel. Kafka's own metric names and values are in the
tooltip. The panel keeps per-topic counts between frames (a step recounts only the topics it
changed) and repaints only when a number changes; its height is fixed, so never a relayout.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from collections import Counter

from engine.controller.controller_metrics import (BROKER_STATE_ACTIVE, BROKER_STATE_CONTROLLED_SHUTDOWN,
                                                  BROKER_STATE_FENCED, ControllerMetrics, PartitionCounts, TopicCounts,
                                                  controller_metrics, kafka_metrics)
from engine.image.metadata_image import MetadataImage
from metashell.dashboard.panels import iso_utc

LINES = 5


def _count(value: int, label: str, style: str | None = None) -> str:
    """``3 fenced``, in ``style`` only when not zero (zero is the healthy state)."""
    return f"[{style}]{value} {label}[/]" if style and value else f"{value} {label}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def broker_states(metrics: ControllerMetrics) -> tuple[int, int, int]:
    """(active, in controlled shutdown, fenced): each broker counted once, in its
    BrokerRegistrationState. Kafka's own counts overlap (ActiveBrokerCount is every unfenced
    broker, shutting down or not; ControlledShutdownBrokerCount every registration in controlled
    shutdown, fenced or not: a broker that finished one is fenced *and* still in it, until it
    registers again), so they are not what an operator adds up; they stay in the tooltip."""
    states = Counter(state for _, state in metrics.broker_registration_states)
    return (states[BROKER_STATE_ACTIVE], states[BROKER_STATE_CONTROLLED_SHUTDOWN], states[BROKER_STATE_FENCED])


def shut_down_cleanly(image: MetadataImage) -> int:
    """Fenced brokers whose registration is still in controlled shutdown: they finished one."""
    return sum(1 for b in image.cluster.brokers.values() if b.fenced and b.in_controlled_shutdown)


def metrics_markup(metrics: ControllerMetrics, shut_down: int = 0, *, counting: bool = False) -> str:
    """The panel's lines, as Textual markup (numbers and fixed words only: nothing to escape).
    ``shut_down``: how many of the fenced brokers got there by a controlled shutdown;
    ``counting``: the partition counts are still being made (metashell.dashboard.counting): the
    two lines of partition counts say so, and no number."""
    mx = metrics
    leader = (f"[b $accent]{mx.active_controller_id}[/] · epoch {mx.active_controller_epoch}"
              if mx.active_controller_id >= 0 else "[$error]none[/]")
    label = "[$text-muted]{:<11}[/]".format
    active, shutting_down, fenced = broker_states(mx)
    clean = f" ({shut_down} shut down)" if shut_down else ""
    applied = (f"offset {mx.last_applied_record_offset} · {iso_utc(mx.last_applied_record_timestamp)}"
               if mx.last_applied_record_offset >= 0 else "nothing yet: before the first record")
    if counting:
        partitions = [f"{label('partitions')}counting… in {_plural(mx.global_topic_count, 'topic')}",
                      f"{label('KIP-966')}[$text-muted]counting…[/]"]
    else:
        partitions = [
            f"{label('partitions')}{mx.global_partition_count} in {_plural(mx.global_topic_count, 'topic')} · "
            f"{_count(mx.offline_partitions_count, 'offline', 'b $error')} · "
            f"{_count(mx.preferred_replica_imbalance_count, 'imbalanced', '$warning')}",
            f"{label('KIP-966')}{_count(mx.partitions_with_elr_count, 'with ELR', '$secondary')} · "
            f"{_count(mx.partitions_with_empty_isr_count, 'with empty ISR', '$error')}"]
    return "\n".join([
        f"{label('controller')}{leader} · {_plural(mx.new_active_controllers_count, 'leader change')}",
        f"{label('brokers')}{_count(active, 'active', '$success')} · "
        f"{_count(fenced, 'fenced', 'b $error')}{clean} · "
        f"{_count(shutting_down, 'in shutdown', '$warning')}",
        *partitions,
        f"{label('applied')}{applied}",
    ])


class _NotCounted(TopicCounts):
    """Stands in for the counts while they are made: zeros, which the panel never shows."""

    def total(self, image: MetadataImage) -> PartitionCounts:
        return PartitionCounts()


_NOT_COUNTED = _NotCounted()


class ControllerPanel(Widget, can_focus=True):  # focusable: a panel the tab keys stop at
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="panel")
        self.border_title = "Controller"
        self.metrics: ControllerMetrics | None = None
        self._image: MetadataImage | None = None
        self._counts = TopicCounts()
        self._shut_down = 0
        self._content = Content("")

    def render(self) -> Content:
        return self._content

    def show(self, image: MetadataImage, *, counted: bool = True) -> bool:
        """The metrics of ``image``; False when nothing shown changed. ``counted`` False: its
        partitions are still being counted (metashell.dashboard.counting): ``metrics`` stays None
        and the panel says "counting…" where the partition counts go."""
        if image is self._image and counted == (self.metrics is not None):
            return False
        self._image = image
        if not counted:  # the broker and controller lines need no partition: zeros stand in, unshown
            shown = controller_metrics(image, cache=_NOT_COUNTED)
            self.metrics, self._shut_down = None, shut_down_cleanly(image)
            self._content = Content.from_markup(metrics_markup(shown, self._shut_down, counting=True))
            self.tooltip = "partition counts: counting…"
            self.refresh()
            return True
        metrics = controller_metrics(image, cache=self._counts)
        shut_down = shut_down_cleanly(image)
        if (metrics, shut_down) == (self.metrics, self._shut_down):
            return False
        self.metrics, self._shut_down = metrics, shut_down
        self._content = Content.from_markup(metrics_markup(metrics, shut_down))
        self.tooltip = "\n".join(f"{name.partition('name=')[2]} = {value}"
                                 for name, value in kafka_metrics(metrics).items())
        self.refresh()
        return True

    def take_counts(self, counts: TopicCounts) -> None:
        """Per-topic counts made in the background (metashell.dashboard.counting)."""
        self._counts = counts

    def text(self) -> str:
        """The panel as plain text (tests)."""
        return self._content.plain
