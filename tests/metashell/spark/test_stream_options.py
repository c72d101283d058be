"""The kraft stream's options and offsets: each mistake is one line naming the option (or the
offset) and what it expected, before any connection or file is opened; and through a real query,
the line reaches the user in the query's failure."""

from __future__ import annotations

import pytest

from metashell.spark.stream_offsets import Position, StreamOptionError, offset_json, positions_of
from metashell.spark.stream_source import stream_reader


@pytest.mark.parametrize(("options", "line"), [
    ({}, "the kraft stream needs option bootstrap.controllers (a live quorum) or load(path)"),
    ({"bootstrap.controllers": "h:9093", "path": "/a"}, "give either option bootstrap.controllers"),
    ({"bootstrap.controllers": " "}, "option bootstrap.controllers is empty"),
    ({"bootstrap.controllers": "h:9093", "table": "partition_changes"},
     "option table='partition_changes': the kraft stream serves the records table"),
    ({"bootstrap.controllers": "h:9093", "mode": "PERMISSIVE"},
     "option mode='PERMISSIVE': a stream fails on damage"),
    ({"bootstrap.controllers": "h:9093", "failOnDataLoss": "maybe"},
     "option failOnDataLoss='maybe': expected true or false"),
    ({"bootstrap.controllers": "h:9093", "startingOffsets": "5"},
     "option startingOffsets='5': expected earliest or latest"),
    ({"bootstrap.controllers": "h:9093", "maxBufferBytes": "0"},
     "option maxBufferBytes='0': expected a whole number >= 1"),
    ({"bootstrap.controllers": "nohost"}, "option bootstrap.controllers"),
    ({"bootstrap.controllers": "h:9093", "kafka.request.timeout.ms": "soon"}, "request.timeout.ms"),
    ({"bootstrap.controllers": "h:9093", "kafka.security.protocol": "CARRIER_PIGEON"}, "security.protocol"),
    ({"bootstrap.controllers": "h:9093", "command.config": "/nonexistent/client.properties"},
     "option command.config: /nonexistent/client.properties"),
])
def test_a_bad_option_is_one_line_naming_it(options, line):
    with pytest.raises(StreamOptionError) as raised:
        stream_reader(options)
    message = str(raised.value)
    assert line in message and "\n" not in message and "Traceback" not in message


def test_a_path_that_is_no_archive_is_named(tmp_path):
    with pytest.raises(StreamOptionError, match=rf"^{tmp_path}: not an archive \(no archive.json\)"):
        stream_reader({"path": str(tmp_path)})


def test_command_config_and_kafka_options_make_the_client_settings(tmp_path):
    from metashell.spark.stream_quorum import client_config

    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nrequest.timeout.ms=9000\n")
    config = client_config({"command.config": str(path), "kafka.request.timeout.ms": "4000"})
    assert config == {"security.protocol": "SASL_PLAINTEXT", "request.timeout.ms": "4000"}


def test_offsets_round_trip_and_foreign_ones_are_one_line():
    offset = offset_json({"b": Position(5, 2), "a": Position(0, 0)})
    assert list(offset["clusters"]) == ["a", "b"]  # sorted: equal offsets are equal JSON
    assert positions_of(offset) == {"a": Position(0, 0), "b": Position(5, 2)}
    with pytest.raises(StreamOptionError, match="is not a kraft stream offset"):
        positions_of({"topic": {"0": 12}})  # a Kafka source's checkpoint
    with pytest.raises(StreamOptionError, match="cluster a's position .* is not"):
        positions_of({"clusters": {"a": {"next": -1, "epoch": 0}}})


def test_a_bad_option_fails_the_query_with_its_line(spark, tmp_path):
    from tests.metashell.spark.stream_fixtures import register, start_query

    fmt = register(spark)
    stream = spark.readStream.format(fmt).option("bootstrap.controllers", "127.0.0.1:1") \
        .option("failOnDataLoss", "perhaps").load()
    query = start_query(spark, stream, tmp_path / "out", tmp_path / "checkpoint", "bad_option")
    try:
        with pytest.raises(Exception, match="option failOnDataLoss='perhaps': expected true or false"):
            query.awaitTermination(60)
    finally:
        query.stop()


@pytest.mark.parametrize("name", ["startOffset", "endOffset", "maxRecordsPerTrigger"])
def test_the_batch_reads_offsets_are_refused_by_the_stream(name):
    with pytest.raises(StreamOptionError, match=rf"^option {name} is not the kraft stream's: "):
        stream_reader({"bootstrap.controllers": "h:9093", name: "5"})
