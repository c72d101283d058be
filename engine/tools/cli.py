"""``kraftd``: the engine's command line (dump-log, storage, quorum, start, bench, fuzz).

Every error reaches the user as one line on stderr and exit code 1; a
traceback never does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from engine.common.command_line import OneLineParser, run_guarded
from engine.common.errors import ConfigError, StorageError


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _note(line: str) -> None:
    sys.stderr.write(f"kraftd: note: {line}\n")


def cmd_dump_log(args: argparse.Namespace) -> int:
    from engine.admin.dump_workers import usable_cores
    from engine.admin.log_dump import dump_files

    workers = args.workers if args.workers is not None else min(2, usable_cores())
    # whole batches at a time to stdout (one write a span of batches, not one a line)
    dump_files(args.files, _out, _note, skip_record_metadata=args.skip_record_metadata,
               write=sys.stdout.write, workers=workers)
    return 0


def cmd_storage_format(args: argparse.Namespace) -> int:
    from engine.admin.storage_format import format_storage

    features = dict(_parse_feature(f) for f in args.feature or [])
    format_storage(Path(args.config), args.cluster_id, release_version=args.release_version,
                   standalone=args.standalone, initial_controllers=args.initial_controllers,
                   no_initial_controllers=args.no_initial_controllers,
                   ignore_formatted=args.ignore_formatted, features=features, add_scram=args.add_scram or (),
                   out=_out)
    return 0


def _parse_feature(text: str) -> tuple[str, int]:
    name, eq, level = text.partition("=")
    if not eq or not level.strip().isdigit():
        raise ConfigError(f"bad --feature {text!r} (expected NAME=LEVEL)")
    return name.strip(), int(level)


def cmd_storage_info(args: argparse.Namespace) -> int:
    from engine.admin.storage_format import storage_info

    problems = storage_info(Path(args.config), out=_out)
    if problems:  # the report is on stdout, as Kafka prints it; the verdict is one line on stderr
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise StorageError(f"{problems[0]}{more}")
    return 0


def cmd_random_uuid(args: argparse.Namespace) -> int:
    from engine.common.kafka_uuid import random_kafka_uuid, uuid_to_kafka

    _out(uuid_to_kafka(random_kafka_uuid()))
    return 0


def cmd_bench_decode(args: argparse.Namespace) -> int:
    from engine.bench.replay import bench_decode

    bench_decode(args.partitions, rounds=args.rounds, out=_out, directories=args.directories)
    return 0


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(text)


def cmd_bench_replay(args: argparse.Namespace) -> int:
    from engine.bench.replay import bench_replay

    bench_replay(args.topics, args.partitions_per_topic, out=_out)
    return 0


def cmd_bench_peer(args: argparse.Namespace) -> int:
    from engine.bench.peer import bench_peer

    bench_peer([Path(libs) for libs in args.kafka_libs], partitions=args.partitions,
               log_partitions=args.log_partitions, rounds=args.rounds, kafka_heap=args.kafka_heap,
               directory=Path(args.dir) if args.dir else None, controller=args.controller,
               controller_heap=args.controller_kafka_heap, attach_seconds=args.attach_seconds if args.attach else 0.0,
               out=_out)
    return 0


def cmd_quorum(args: argparse.Namespace) -> int:
    from engine.tools.quorum_tool import run_quorum

    return run_quorum(args, _out)


def cmd_cluster(args: argparse.Namespace) -> int:
    from engine.cluster.tool import run_cluster

    return run_cluster(args, _out)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from engine.fuzz.fuzzer import run_fuzz, target_names

    if args.list:
        from engine.fuzz.targets import TARGETS

        for name in target_names():
            _out(f"{name}: {TARGETS[name].description}")
        return 0
    if args.target is None:
        raise ConfigError(f"fuzz: name a target (one of: {', '.join(target_names())}) or --list")
    return run_fuzz(args.target, seconds=args.seconds, runs=args.runs,
                    corpus=Path(args.corpus) if args.corpus else None, findings_dir=Path(args.findings),
                    engine=args.engine, out=_out, seed=args.seed)


def cmd_start(args: argparse.Namespace) -> int:
    from engine.server.node_process import run_start

    return run_start([Path(c) for c in args.config])


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="kraftd", description="The metashell KRaft engine.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    dump = sub.add_parser("dump-log", help="print record batches and records of segments and snapshots")
    dump.add_argument("files", nargs="+", help="segment (.log) or snapshot (.checkpoint) files, or directories")
    dump.add_argument("--skip-record-metadata", action="store_true", help="print only the records' payloads")
    dump.add_argument("--cluster-metadata-decoder", action="store_true",
                      help="accepted for kafka-dump-log compatibility (always on)")
    dump.add_argument("--deep-iteration", "--print-data-log", action="store_true",
                      help="accepted for kafka-dump-log compatibility (the decoder implies both)")
    dump.add_argument("--workers", type=_positive, default=None,
                      help="processes printing a large file (default: 2 where 2 cores are usable, else 1)")
    dump.set_defaults(run=cmd_dump_log)

    storage = sub.add_parser("storage", help="format and inspect log directories")
    storage_sub = storage.add_subparsers(dest="storage_command", required=True, parser_class=OneLineParser)
    fmt = storage_sub.add_parser("format", help="format the log directories of a node")
    fmt.add_argument("--config", "-c", required=True, help="the node's .properties file")
    fmt.add_argument("--cluster-id", "-t", required=True, help="the cluster id (see random-uuid)")
    fmt.add_argument("--release-version", "-r", help="e.g. 3.7 or 3.7-IV4 (default: latest production)")
    fmt.add_argument("--feature", "-f", action="append", help="NAME=LEVEL, a feature level to set")
    fmt.add_argument("--ignore-formatted", "-g", action="store_true", help="skip directories already formatted")
    fmt.add_argument("--add-scram", "-S", action="append",
                     help="a SCRAM credential for bootstrap.checkpoint, e.g. 'SCRAM-SHA-256=[name=alice,password=s]' "
                          "(also salt=, iterations=, saltedpassword=; repeatable)")
    voters = fmt.add_mutually_exclusive_group()
    voters.add_argument("--standalone", "-s", action="store_true", help="this controller is the only voter")
    voters.add_argument("--initial-controllers", "-I", help="ID@HOST:PORT:DIRECTORY_ID,... the initial voters")
    voters.add_argument("--no-initial-controllers", "-N", action="store_true",
                        help="join an existing dynamic quorum later")
    fmt.set_defaults(run=cmd_storage_format)
    info = storage_sub.add_parser("info", help="describe the log directories of a node")
    info.add_argument("--config", "-c", required=True)
    info.set_defaults(run=cmd_storage_info)
    rnd = storage_sub.add_parser("random-uuid", help="print a new random cluster or directory id")
    rnd.set_defaults(run=cmd_random_uuid)

    from engine.tools.quorum_tool import add_quorum_parser  # light: it imports kio only when it talks

    add_quorum_parser(sub, cmd_quorum)

    from engine.cluster.tool import add_parser as add_cluster_parser  # light: its work imports late

    add_cluster_parser(sub, cmd_cluster)

    start = sub.add_parser("start", help="run a KRaft controller or a simulated broker (process.roles)")
    start.add_argument("--config", "-c", required=True, action="append",
                       help="the node's .properties file (Kafka's names); several broker configs: one process "
                            "hosting them all")
    start.set_defaults(run=cmd_start)

    fuzz = sub.add_parser("fuzz", help="fuzz a decoder or a served listener (atheris if installed, else Hypothesis); see docs/reliability.md")
    fuzz.add_argument("target", nargs="?", help="what to fuzz (see --list)")
    fuzz.add_argument("--list", action="store_true", help="list the targets")
    fuzz.add_argument("--seconds", type=float, default=60.0, help="how long to run (unless --runs)")
    fuzz.add_argument("--runs", type=_positive, help="stop after this many inputs instead")
    fuzz.add_argument("--corpus", help="seed inputs (default: tests/fuzz_corpus/TARGET of a source checkout)")
    fuzz.add_argument("--findings", default="kraftd-fuzz-findings", help="where inputs that broke a target go")
    fuzz.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    fuzz.add_argument("--seed", type=_positive, help="the random seed (the same seed, runs and corpus: the same "
                                                     "inputs; default: a new one each run)")
    fuzz.set_defaults(run=cmd_fuzz)

    bench = sub.add_parser("bench", help="measure throughput")
    bench_sub = bench.add_subparsers(dest="bench_command", required=True, parser_class=OneLineParser)
    decode = bench_sub.add_parser("decode", help="decoded records/s of a PartitionRecord-heavy log")
    decode.add_argument("--partitions", type=_positive, default=300_000)
    decode.add_argument("--rounds", type=_positive, default=3)
    decode.add_argument("--directories", action="store_true",
                        help="give replicas log directory ids, as Kafka 3.7+ writes them")
    decode.set_defaults(run=cmd_bench_decode)
    replay = bench_sub.add_parser("replay", help="load a generated snapshot: replay rate, memory, first prompt")
    replay.add_argument("--topics", type=_positive, default=10_000)
    replay.add_argument("--partitions-per-topic", type=_positive, default=100)
    replay.set_defaults(run=cmd_bench_replay)
    peer = bench_sub.add_parser(
        "peer", help="against Apache Kafka's tools, same files, in turn: first answer, whole image, dump-log",
        description="metashell against kafka-metadata-shell on a snapshot written as Kafka 4.x writes one (both "
                    "interactive, each asked ls /image/topics/byName, a partition's cat and find "
                    "/image/topics/byName until the answer is right), and kraftd dump-log against kafka-dump-log "
                    "--cluster-metadata-decoder; A B A B; prints a table of medians, ranges and ratios. Kafka's "
                    "mains run with java -cp 'DIR/*' and kafka-run-class.sh's default flags.")
    peer.add_argument("--kafka-libs", required=True, action="append", metavar="DIR",
                      help="a directory of Kafka's jars (its libs/); give it once per Kafka version to compare")
    peer.add_argument("--partitions", type=_positive, default=1_000_000, help="partitions of the snapshot")
    peer.add_argument("--log-partitions", type=_positive, default=300_000, help="partitions of the dumped log")
    peer.add_argument("--rounds", type=_positive, default=3, help="counted runs of each side, after one warm-up")
    peer.add_argument("--kafka-heap", default="2G", help="-Xmx of kafka-metadata-shell (kafka-dump-log keeps "
                      "Kafka's default 256M)")
    peer.add_argument("--dir", help="keep the generated files here and reuse them next time")
    peer.add_argument("--controller", action="store_true",
                      help="also run `kraftd bench controller` for as many partitions, against the last Kafka "
                           "given (minutes: three controllers a side)")
    peer.add_argument("--controller-kafka-heap", default="4G", metavar="HEAP",
                      help="-Xmx and -Xms of each of Kafka's controllers with --controller (1,000,000 partitions "
                           "need about 4G)")
    peer.add_argument("--attach", action="store_true",
                      help="also run `metashell bench attach` for as many partitions, against the last Kafka given "
                           "(attach, first answer, commit to tree; minutes: three controllers a side)")
    peer.add_argument("--attach-seconds", type=float, default=30.0, metavar="S",
                      help="how long the attach bench's load commits, with --attach")
    peer.set_defaults(run=cmd_bench_peer)

    quorum_bench = bench_sub.add_parser("quorum", help="3 controller processes on loopback: commit latency, records/s")
    quorum_bench.add_argument("--seconds", type=float, default=10.0, help="measured time per phase")
    quorum_bench.add_argument("--latency-rate", type=float, default=1000.0, help="records/s of the latency phase")
    quorum_bench.add_argument("--throughput-rate", type=float, default=50_000.0,
                              help="records/s offered in the throughput phase")
    quorum_bench.add_argument("--batch", type=_positive, default=200, help="records per append (throughput phase)")
    quorum_bench.add_argument("--linger-ms", type=int, default=1, help="controller.quorum.append.linger.ms")
    quorum_bench.set_defaults(run=cmd_bench_quorum)

    failover = bench_sub.add_parser("failover", help="3 controller processes: time to a new leader after SIGKILL")
    failover.add_argument("--rounds", type=_positive, default=20)
    failover.add_argument("--fetch-timeout-ms", type=_positive, default=1000,
                          help="controller.quorum.fetch.timeout.ms (Kafka's default is 2000)")
    failover.add_argument("--election-timeout-ms", type=_positive, default=1000,
                          help="controller.quorum.election.timeout.ms")
    failover.set_defaults(run=cmd_bench_failover)
    controller = bench_sub.add_parser(
        "controller", help="3 controller processes: CreateTopics of N partitions, heartbeat latency, memory, failover",
        description="Three `kraftd start` controllers (and, with --kafka-libs, three of Kafka's) on 127.0.0.1, "
                    "driven by one load client over real sockets: time to create the partitions through "
                    "CreateTopics, BrokerHeartbeat latency of simulated brokers, peak RSS per controller, and "
                    "the time from SIGKILL of the active controller to a CreateTopics answered by the next.")
    controller.add_argument("--topics", type=_positive, default=10_000)
    controller.add_argument("--partitions-per-topic", type=_positive, default=100)
    controller.add_argument("--brokers", type=_positive, default=12, help="brokers holding the partitions")
    controller.add_argument("--heartbeat-brokers", type=_positive, default=1000,
                            help="brokers heartbeating in the latency phase (the --brokers among them)")
    controller.add_argument("--heartbeat-seconds", type=float, default=20.0)
    controller.add_argument("--heartbeat-interval-ms", type=_positive, default=2000,
                            help="broker.heartbeat.interval.ms of the simulated brokers")
    controller.add_argument("--in-flight", type=_positive, default=4, help="CreateTopics requests in flight")
    controller.add_argument("--failovers", type=int, default=3, help="SIGKILLs of the active controller")
    controller.add_argument("--kafka-libs", metavar="DIR", help="Kafka's jars (its libs/): run its controllers too")
    controller.add_argument("--kafka-heap", default="1G", help="-Xmx/-Xms of Kafka's controllers "
                            "(kafka-server-start's default is 1G)")
    controller.add_argument("--kafka-only", action="store_true", help="skip our controllers")
    controller.add_argument("--rounds", type=_positive, default=1,
                            help="run the sides this many times, alternating (ours, Kafka's, ours, ...): "
                                 "the creation time's median and range")
    controller.add_argument("--create-only", action="store_true",
                            help="only the creation (and peak RSS): no heartbeat phase, no failover")
    controller.add_argument("--sim-brokers", type=_positive, metavar="N",
                            help="instead: N simulated broker processes' worth of brokers (`kraftd cluster up "
                                 "--brokers N`) held --sim-seconds; their heartbeat latency, every broker unfenced?")
    controller.add_argument("--brokers-per-process", type=_positive, metavar="K", help="with --sim-brokers")
    controller.add_argument("--sim-controllers", type=_positive, default=3, help="with --sim-brokers")
    controller.add_argument("--sim-seconds", type=float, default=180.0, help="with --sim-brokers: the steady window")
    controller.set_defaults(run=cmd_bench_controller)

    sim = sub.add_parser("sim", help="deterministic simulations")
    sim_sub = sim.add_subparsers(dest="sim_command", required=True, parser_class=OneLineParser)
    quorum_sim = sim_sub.add_parser("quorum", help="random fault schedules over a simulated quorum, seed by seed")
    quorum_sim.add_argument("--seeds", type=_positive, default=100)
    quorum_sim.add_argument("--first-seed", type=int, default=1)
    quorum_sim.add_argument("--events", type=_positive, default=2000)
    quorum_sim.add_argument("--voters", type=_positive, default=3)
    quorum_sim.add_argument("--observers", type=int, default=1)
    quorum_sim.add_argument("--kraft-version", type=int, choices=(0, 1), default=1)
    quorum_sim.add_argument("--trace", action="store_true", help="print every role change of a seed")
    quorum_sim.set_defaults(run=cmd_sim_quorum)
    controller_sim = sim_sub.add_parser("controller", help="random fault schedules over 3 simulated controllers "
                                                            "with brokers and clients, seed by seed")
    controller_sim.add_argument("--seeds", type=_positive, default=100)
    controller_sim.add_argument("--first-seed", type=int, default=1)
    controller_sim.add_argument("--events", type=_positive, default=2000)
    controller_sim.add_argument("--bug", choices=("fenced-leader", "elr-overlap", "hidden-unclean"),
                                help="seed a controller bug the invariants must catch (a negative control)")
    controller_sim.add_argument("--trace", action="store_true", help="print everything that happens in a seed")
    controller_sim.set_defaults(run=cmd_sim_controller)
    return parser


def cmd_bench_quorum(args: argparse.Namespace) -> int:
    from engine.bench.quorum import bench_quorum

    bench_quorum(seconds=args.seconds, latency_rate=args.latency_rate, throughput_rate=args.throughput_rate,
                 batch=args.batch, linger_ms=args.linger_ms, out=_out)
    return 0


def cmd_bench_controller(args: argparse.Namespace) -> int:
    from engine.bench.controller import bench_controller

    if args.sim_brokers:
        from engine.bench.controller_sim import bench_sim_brokers
        result = bench_sim_brokers(brokers=args.sim_brokers, brokers_per_process=args.brokers_per_process,
                                   controllers=args.sim_controllers, seconds=args.sim_seconds,
                                   interval_ms=args.heartbeat_interval_ms, out=_out)
        return 0 if result.stable else 1
    bench_controller(topics=args.topics, partitions=args.partitions_per_topic, brokers=args.brokers,
                     heartbeat_brokers=args.heartbeat_brokers, heartbeat_seconds=args.heartbeat_seconds,
                     interval_ms=args.heartbeat_interval_ms, in_flight=args.in_flight, failovers=args.failovers,
                     kafka_libs=Path(args.kafka_libs) if args.kafka_libs else None, kafka_heap=args.kafka_heap,
                     skip_ours=args.kafka_only, rounds=args.rounds, create_only=args.create_only, out=_out)
    return 0


def cmd_bench_failover(args: argparse.Namespace) -> int:
    from engine.bench.failover import bench_failover

    bench_failover(rounds=args.rounds, fetch_timeout_ms=args.fetch_timeout_ms,
                   election_timeout_ms=args.election_timeout_ms, out=_out)
    return 0


def cmd_sim_quorum(args: argparse.Namespace) -> int:
    from engine.sim.raft_runner import run_seeds
    from engine.sim.raft_simulation import SimConfig

    config = SimConfig(voters=args.voters, observers=args.observers, kraft_version=args.kraft_version)
    results = run_seeds(args.first_seed, args.seeds, args.events, out=_out, config=config, trace=args.trace)
    return 1 if any(r.violation for r in results) else 0


def cmd_sim_controller(args: argparse.Namespace) -> int:
    from engine.sim.controller_runner import run_controller_seeds

    return run_controller_seeds(args.first_seed, args.seeds, args.events, out=_out, bug=args.bug, trace=args.trace)


def run(argv: Sequence[str] | None = None, err: Callable[[str], None] | None = None) -> int:
    def work() -> int:
        args = build_parser().parse_args(argv)
        return args.run(args)

    return run_guarded("kraftd", work, err)


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
