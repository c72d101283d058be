"""A controller under benchmark load: ``python -m engine.bench.node -c FILE --load-rate R``.

The same ControllerNode as ``kraftd start`` (same config, storage, logs, signals, exit
codes), with a LoadGenerator (engine.bench.load_generator) attached through the node's
``attach`` hook: whichever node leads appends NoOpRecords at ``--load-rate`` records/s,
``--load-batch`` per append, and measures their commit latency; ``--load-report FILE`` gets
the JSON report every second and at shutdown. ``kraftd bench quorum`` starts its three
controllers with this; production nodes never carry the load code.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path
from typing import Sequence

from engine.common.command_line import OneLineParser, run_guarded
from engine.server.controller_node import ControllerNode, load_controller_settings, setup_logging
from engine.server.node_process import serve
from engine.bench.load_generator import LoadGenerator

REPORT_INTERVAL_S = 1.0


class BenchLoad:
    """A LoadGenerator wired to a node: its tick task, its report task, its last report."""

    def __init__(self, node: ControllerNode, rate: float, batch: int, report: Path | None):
        self.node = node
        self.generator = LoadGenerator(rate, batch, node_id=node.settings.node_id)
        self.report_path = report
        node.attach(self.generator, task=self.run, on_stop=self.write_report)

    async def run(self) -> None:
        generator, driver = self.generator, self.node.driver
        next_report = asyncio.get_running_loop().time() + REPORT_INTERVAL_S
        while True:
            await asyncio.sleep(generator.interval_s)
            generator.tick(driver.is_leader, driver.schedule_append)
            if asyncio.get_running_loop().time() >= next_report:
                next_report += REPORT_INTERVAL_S
                self.write_report()

    def write_report(self) -> None:
        if self.report_path is None:
            return
        try:
            self.generator.write_report(self.report_path)
        except OSError as err:
            logging.getLogger("kraftd.bench").warning("%s cannot write the load report %s: %s", self.node.prefix,
                                                      self.report_path, err.strerror or err)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="bench_node", description="A KRaft controller under benchmark load.")
    parser.add_argument("--config", "-c", required=True, help="the controller's .properties file")
    parser.add_argument("--load-rate", type=_positive_float, required=True, help="records/s appended while leading")
    parser.add_argument("--load-batch", type=_positive_int, default=1, help="records per append")
    parser.add_argument("--load-report", help="write the JSON latency report here every second")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    def work() -> int:
        args = build_parser().parse_args(argv)
        node = ControllerNode(load_controller_settings(Path(args.config)))
        BenchLoad(node, args.load_rate, args.load_batch, Path(args.load_report) if args.load_report else None)
        setup_logging()
        return asyncio.run(serve(node, []))

    return run_guarded("bench_node", work)


if __name__ == "__main__":
    raise SystemExit(main())
