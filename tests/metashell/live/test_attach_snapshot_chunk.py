"""The FetchSnapshot chunk the attachment asks for: Kafka 4.3's default, or the command config's."""

from __future__ import annotations

import pytest

from engine.common.errors import ConfigError
from metashell.live.attach import SNAPSHOT_CHUNK_BYTES, follower_settings


def test_the_chunk_is_kafka_4_3_s_default_unless_the_command_config_sets_one() -> None:
    assert SNAPSHOT_CHUNK_BYTES == 1024 * 1024 == follower_settings({}).snapshot_max_bytes
    assert follower_settings({"controller.quorum.fetch.snapshot.max.bytes": "8388608"}).snapshot_max_bytes == 8388608


@pytest.mark.parametrize("value", ["0", "lots", "-1"])
def test_a_bad_chunk_size_is_refused_with_one_line_naming_the_key(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        follower_settings({"controller.quorum.fetch.snapshot.max.bytes": value})
    line = str(raised.value)
    assert "controller.quorum.fetch.snapshot.max.bytes" in line and "\n" not in line
