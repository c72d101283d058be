"""The kraft stream reaches a secured quorum with the settings of ``metashell --command-config``:
a kraftd cluster on SASL_PLAINTEXT (SCRAM-SHA-512, the controllers' StandardAuthorizer), the
client.properties ``kraftd cluster up`` wrote, given as ``command.config`` or as ``kafka.``
options. A wrong password fails the query in one line that does not repeat it."""

from __future__ import annotations

import re

import pytest

from engine.common.java_properties import load_properties
from tests.live_cluster import bootstrap, running_cluster
from tests.metashell.record.recorder_process import log_end_offset
from tests.metashell.spark.stream_fixtures import (contiguous, expected_rows, parquet_rows, register, start_query,
                                                   wait_stream)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("stream-sasl") / "cluster", "--controllers", "1",
                               "--brokers", "1", "--security", "sasl_plaintext")


def _metadata(cluster):
    return cluster.root / "controller-1" / "metadata" / "__cluster_metadata-0"


def test_a_sasl_quorum_streams_with_the_command_config(spark, cluster, tmp_path):
    fmt = register(spark)
    out = tmp_path / "out"
    stream = spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster)) \
        .option("command.config", str(cluster.root / "client.properties")).load()
    query = start_query(spark, stream, out, tmp_path / "checkpoint", "sasl_stream")
    try:
        wait_stream(query, log_end_offset(_metadata(cluster)))
    finally:
        query.stop()
    rows = parquet_rows(spark, out)
    contiguous(rows)
    cluster_id = rows[0][0]
    assert sorted(rows) == sorted(r for r in expected_rows(_metadata(cluster), cluster_id)
                                  if r[1] <= max(x[1] for x in rows))


def test_a_wrong_password_in_a_kafka_option_fails_the_query_in_one_line(spark, cluster, tmp_path):
    fmt = register(spark)
    config = load_properties(str(cluster.root / "client.properties"))
    wrong = re.sub(r'password="[^"]*"', 'password="not-the-password"', config["sasl.jaas.config"])
    stream = spark.readStream.format(fmt).option("bootstrap.controllers", bootstrap(cluster))
    for key, value in {**config, "sasl.jaas.config": wrong}.items():
        stream = stream.option(f"kafka.{key}", value)
    query = start_query(spark, stream.load(), tmp_path / "out", tmp_path / "checkpoint", "sasl_wrong")
    try:
        with pytest.raises(Exception) as failed:
            query.awaitTermination(120)
    finally:
        query.stop()
    message = str(failed.value)
    assert "not-the-password" not in message
    assert re.search(r"StreamError: .*(authentication|SASL|password)", message, re.IGNORECASE), message
