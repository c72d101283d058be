"""What security costs a tool run, ours beside Kafka's: ``python -m tests.kafka_peer.secured_bench``.

One-controller quorums on 127.0.0.1, each started once: Kafka's with a PLAINTEXT controller
listener, Kafka's on SASL_SSL with SCRAM-SHA-512 (StandardAuthorizer on), Kafka's on mutual TLS,
and ours (``kraftd start``) on SASL_SSL with SCRAM-SHA-512, all from tests/kafka_peer (the
certificates made on the spot). Against each, the two tools that describe a quorum run in turn,
A B A B, as whole processes with the same ``--command-config``:

    kraftd quorum --bootstrap-controller B [--command-config F] describe --status
    kafka-metadata-quorum --bootstrap-controller B [--command-config F] describe --status

and, ours alone (Kafka's metadata shell reads files only), the live attach:

    metashell --bootstrap-controller B [--command-config F] -c "ls /brokers"

Each figure is the wall time of one process from its start to its exit (every run must exit 0),
the median of ``--runs``, with the min and max. The machine is shared: compare medians, and the
PLAINTEXT row with the secured ones of the same tool.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from .cluster import KafkaCluster
from .distribution import fetch
from .secured import SecuredQuorum

REPO = Path(__file__).resolve().parents[2]


def _timed(argv: Sequence[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300, cwd=REPO)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return elapsed


def _row(what: str, times: list[float]) -> str:
    return f"| {what} | {statistics.median(times):.2f} s ({min(times):.2f} – {max(times):.2f}) |"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kafka_peer.secured_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--kafka", default="4.3.1", help="the Kafka version (its jars are fetched by Maven)")
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (default 7)")
    args = parser.parse_args(argv)
    dist = fetch(args.kafka)
    with tempfile.TemporaryDirectory(prefix="secured-bench-") as directory:
        root = Path(directory)
        plain = KafkaCluster(dist, root / "plain").start()
        sasl = SecuredQuorum.sasl_ssl(dist, root / "sasl").start()
        mtls = SecuredQuorum.mutual_tls(dist, root / "mtls").start()
        ours = SecuredQuorum.sasl_ssl(dist, root / "ours", controllers="kraftd").start()
        try:
            targets = [(f"Kafka {args.kafka} controller, PLAINTEXT", plain.bootstrap_controllers, None),
                       (f"Kafka {args.kafka} controller, SASL_SSL SCRAM-SHA-512", sasl.bootstrap_controllers,
                        sasl.client_config("bench-sasl")),
                       (f"Kafka {args.kafka} controller, mutual TLS", mtls.bootstrap_controllers,
                        mtls.client_config("bench-mtls")),
                       ("kraftd controller, SASL_SSL SCRAM-SHA-512", ours.bootstrap_controllers,
                        ours.client_config("bench-ours"))]
            print(f"| {args.runs} runs each, A B A B; wall time of the whole process | median (min – max) |")
            print("|---|---|")
            for name, bootstrap, config in targets:
                extra = ["--command-config", str(config)] if config else []
                commands = {
                    "kraftd quorum describe --status": [sys.executable, "-m", "engine.tools.cli", "quorum",
                                                        "--bootstrap-controller", bootstrap, *extra, "describe",
                                                        "--status"],
                    "kafka-metadata-quorum describe --status": dist.command(
                        "kafka-metadata-quorum", "--bootstrap-controller", bootstrap, *extra, "describe", "--status"),
                    "metashell -c 'ls /brokers' (attach)": [sys.executable, "-m", "metashell.cli",
                                                            "--bootstrap-controller", bootstrap, *extra,
                                                            "-c", "ls /brokers"],
                }
                times: dict[str, list[float]] = {label: [] for label in commands}
                for _ in range(args.runs + 1):  # the first round warms caches and is not counted
                    for label, command in commands.items():
                        times[label].append(_timed(command))
                for label, runs in times.items():
                    print(_row(f"{name}: {label}", runs[1:]), flush=True)
        finally:
            for quorum in (ours, mtls, sasl):
                quorum.close()
            plain.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
