"""``kraftd quorum describe | add-controller | remove-controller``, as ``kafka-metadata-quorum`` does them.

The output is Kafka's MetadataQuorumCommand's, byte for byte; the requests and their answers are
engine.admin.quorum_client's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from engine.admin.quorum_client import (
    BROKERS_FIRST, CONTROLLERS_FIRST, DEFAULT_TIMEOUT_MS, Send, add_voter_request, controller_spec, default_send,
    describe, format_endpoint, parse_bootstrap, remove_voter_request, send_to_leader,
)
from engine.common.command_line import OneLineParser
from engine.common.errors import ConfigError
from engine.common.java_properties import load_properties
from engine.common.kafka_uuid import kafka_to_uuid, uuid_to_kafka


def add_quorum_parser(sub: Any, run: Callable[[argparse.Namespace], int]) -> None:
    """Register ``quorum`` on kraftd's subcommands: the connection options go before the verb, as in Kafka."""
    quorum = sub.add_parser("quorum", help="describe the metadata quorum; add or remove controllers")
    connection = quorum.add_mutually_exclusive_group(required=True)
    connection.add_argument("--bootstrap-server", help="HOST:PORT,... of brokers (or controllers)")
    connection.add_argument("--bootstrap-controller", help="HOST:PORT,... of controllers")
    quorum.add_argument("--command-config", help="a .properties file (add-controller: the new controller's)")
    verbs = quorum.add_subparsers(dest="quorum_command", required=True, parser_class=OneLineParser)
    desc = verbs.add_parser("describe", help="describe the metadata quorum")
    desc.add_argument("--status", action="store_true", help="a short summary of the quorum")
    desc.add_argument("--replication", action="store_true", help="the replication state of each replica")
    desc.add_argument("--human-readable", action="store_true", help="times as 'N ms ago' (--replication)")
    add = verbs.add_parser("add-controller", help="add the controller of --command-config to the quorum")
    rm = verbs.add_parser("remove-controller", help="remove a controller from the quorum")
    rm.add_argument("--controller-id", "-i", type=int, required=True, help="the id of the controller")
    rm.add_argument("--controller-directory-id", "-d", required=True, help="its directory id (base64)")
    for verb in (add, rm):
        verb.add_argument("--dry-run", action="store_true", help="print what would be done")
    quorum.set_defaults(run=run)


def run_quorum(args: argparse.Namespace, out: Callable[[str], None] = print, *, send: Send | None = None) -> int:
    """Carry out a parsed ``kraftd quorum ...``; errors are raised as one-line MetadataErrors."""
    server, config = args.bootstrap_server, args.command_config
    bootstrap = (parse_bootstrap(server, "bootstrap.servers") if server is not None
                 else parse_bootstrap(args.bootstrap_controller, "bootstrap.controllers"))
    types, props = BROKERS_FIRST if server is not None else CONTROLLERS_FIRST, {}
    if config is not None:
        if not Path(config).exists():
            raise ConfigError(f"Properties file {config} does not exists!")
        props = load_properties(config)
    timeout = props.get("request.timeout.ms", "").strip()
    timeout_ms = int(timeout) if timeout.isdigit() else DEFAULT_TIMEOUT_MS
    security = None
    if config is not None and send is None:
        # As Kafka's tool hands the file to its Admin client: security.protocol, sasl.*, ssl.* secure
        # the connections (read now, so a bad setting is one line before anything is sent)
        from engine.net.security_config import client_security
        security = client_security(props, str(config))
    send = send or default_send(timeout_ms, security)
    if args.quorum_command == "describe":
        if args.status and args.replication:
            raise ConfigError("Only one of --status or --replication should be specified with describe sub-command")
        if not args.status and not args.replication:
            raise ConfigError("One of --status or --replication must be specified with describe sub-command")
        if args.status and args.human_readable:
            raise ConfigError("The option --human-readable is only supported along with --replication")
        lines = describe(bootstrap, status=args.status, human_readable=args.human_readable, send=send,
                         endpoint_types=types)
    elif args.quorum_command == "add-controller":
        if config is None:
            raise ConfigError("You must supply the configuration file of the controller you are adding "
                              "when using add-controller.")
        spec = controller_spec(props)
        if not args.dry_run:
            send_to_leader(bootstrap, add_voter_request(spec, timeout_ms), send=send, endpoint_types=types)
        eps = ", ".join(format_endpoint(*e) for e in spec.endpoints)
        lines = [f"{'DRY RUN of adding' if args.dry_run else 'Added'} controller {spec.node_id} with directory id "
                 f"{uuid_to_kafka(spec.directory_id)} and endpoints: {eps}"]
    else:
        if args.controller_id < 0:
            raise ConfigError(f"Invalid negative --controller-id: {args.controller_id}")
        try:
            directory_id = kafka_to_uuid(args.controller_directory_id)  # Uuid.fromString's base64 form
        except ValueError as exc:
            raise ConfigError(f"Failed to parse --controller-directory-id: {exc}") from None
        if not args.dry_run:
            send_to_leader(bootstrap, remove_voter_request(args.controller_id, directory_id), send=send,
                           endpoint_types=types)
        # Kafka's printf("%s KRaft...", "Removed ") puts two spaces there: kept, as Kafka prints it
        lines = [f"{'DRY RUN of removing ' if args.dry_run else 'Removed '} KRaft controller {args.controller_id} "
                 f"with directory id {uuid_to_kafka(directory_id)}"]
    for line in lines:
        out(line)
    return 0
