"""Java .properties, meta.properties and Kafka uuids: behaviour, round trips, bad input.

Expected outputs were checked against java.util.Properties on JDK 17 and 25.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.common.errors import StorageError
from engine.common.java_properties import (
    dump_properties,
    java_date_string,
    load_properties,
    parse_properties,
    write_properties_atomically,
)
from engine.common.kafka_uuid import (
    METADATA_TOPIC_ID,
    RESERVED_UUIDS,
    ZERO_UUID,
    kafka_to_uuid,
    random_kafka_uuid,
    uuid_to_kafka,
)
from engine.storage.meta_properties import MetaProperties, read_meta_properties, write_meta_properties

UTC = timezone.utc
NOW = datetime(2025, 5, 11, 8, 8, 34, tzinfo=UTC)

# ------------------------------------------------------------------ parsing


def test_parse_separators_and_whitespace() -> None:
    text = ("Truth = Beauty\n"
            "  Truth2:Beauty\n"
            "Truth3                    :Beauty\n"
            "Truth4 Beauty\n"
            "\tkey5\t=\t value with trailing  \n"
            "cheeses\n"
            "empty=\n")
    assert parse_properties(text) == {
        "Truth": "Beauty", "Truth2": "Beauty", "Truth3": "Beauty", "Truth4": "Beauty",
        "key5": "value with trailing  ", "cheeses": "", "empty": "",
    }


def test_parse_comments_and_blank_lines() -> None:
    text = "# comment\n! also a comment\n\n   \n  # indented comment \\\nnot.continued=1\n"
    assert parse_properties(text) == {"not.continued": "1"}


def test_parse_continuations() -> None:
    text = ("fruits   apple, banana, pear, \\\n"
            "         cantaloupe, watermelon, \\\n"
            "         kiwi, mango\n"
            "escaped.backslash=a\\\\\n"
            "next=b\n"
            "eof.backslash=c\\")
    assert parse_properties(text) == {
        "fruits": "apple, banana, pear, cantaloupe, watermelon, kiwi, mango",
        "escaped.backslash": "a\\", "next": "b", "eof.backslash": "c",
    }


def test_parse_escapes_and_line_endings() -> None:
    text = ("key\\ with\\ spaces = a\\tb\\nc\\\\d\\=e\\:f\r\n"
            "\\u0041bc=\\u00e9\\u20AC\\uD83D\\uDE00\r"
            "a\\=b\\:c = x\n"
            "\\#not.comment=y\n"
            "other\\q=\\z\n")
    assert parse_properties(text) == {
        "key with spaces": "a\tb\nc\\d=e:f", "Abc": "é€😀", "a=b:c": "x",
        "#not.comment": "y", "otherq": "z",
    }


def test_parse_last_duplicate_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_malformed_unicode_escape_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("ok=1\n# fine\nbad=\\u12G4\n")
    with pytest.raises(StorageError) as e:
        load_properties(path)
    assert str(path) in str(e.value) and "line 3" in str(e.value) and "\\uxxxx" in str(e.value)


def test_high_bytes_read_as_latin1_like_java(tmp_path: Path) -> None:
    """Properties.load(InputStream) reads ISO-8859-1: every byte is a character, none is an error."""
    path = tmp_path / "server.properties"
    path.write_bytes(b"a=1\nb=\xff\xfe\nc=caf\\u00e9\n")
    assert load_properties(path) == {"a": "1", "b": "\u00ff\u00fe", "c": "caf\u00e9"}


def test_missing_properties_file(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="no such file") as e:
        load_properties(tmp_path / "nope.properties")
    assert str(tmp_path / "nope.properties") in str(e.value)


# ------------------------------------------------------------------ writing


def test_dump_like_java_store() -> None:
    props = {"a key": "x=y:z", "#k!": " lead  inner", "ü": "€😀\x01", "tab\t": "line\nbreak\\"}
    assert dump_properties(props, "", now=NOW) == (
        "#\n#Sun May 11 08:08:34 UTC 2025\n"
        "a\\ key=x\\=y\\:z\n"
        "\\#k\\!=\\ lead  inner\n"
        "\\u00FC=\\u20AC\\uD83D\\uDE00\\u0001\n"
        "tab\\t=line\\nbreak\\\\\n"
    )


def test_dump_without_unicode_escapes_and_comment() -> None:
    assert dump_properties({"ü": "€"}, None, now=NOW, escape_unicode=False) == \
        "#Sun May 11 08:08:34 UTC 2025\nü=€\n"


def test_dump_multiline_comment() -> None:
    text = dump_properties({}, "first\n#second\r\nthird€", now=NOW)
    assert text == "#first\n#second\n#third\\u20AC\n#Sun May 11 08:08:34 UTC 2025\n"


def test_key_orders() -> None:
    props = {"version": "1", "cluster.id": "c", "node.id": "1", "directory.id": "d"}
    body = lambda order: [l.split("=")[0] for l in dump_properties(props, None, now=NOW, key_order=order).splitlines()[1:]]  # noqa: E731
    assert body("insertion") == ["version", "cluster.id", "node.id", "directory.id"]
    assert body("sorted") == ["cluster.id", "directory.id", "node.id", "version"]
    assert body("jdk-hash") == ["node.id", "directory.id", "version", "cluster.id"]  # as JDK 17 writes
    with pytest.raises(ValueError):
        dump_properties(props, None, now=NOW, key_order="random")  # type: ignore[arg-type]


def test_jdk_hash_order_through_resizes() -> None:
    # 30 keys make the JDK 17 table grow 16 -> 32 -> 64; the order was taken from a real JVM.
    keys = [f"k{i}" for i in range(30)]
    text = dump_properties(dict.fromkeys(keys, ""), None, now=NOW, key_order="jdk-hash")
    order = [line[:-1] for line in text.splitlines()[1:]]
    assert " ".join(order) == ("k11 k10 k13 k12 k15 k14 k17 k16 k19 k18 k0 k1 k2 k3 k20 k4 k5 k22 "
                               "k6 k21 k7 k24 k8 k23 k9 k26 k25 k28 k27 k29")


def test_java_date_string_zones() -> None:
    assert java_date_string(datetime(2023, 8, 14, 10, 5, 34, tzinfo=timezone(timedelta(hours=1), "WAT"))) \
        == "Mon Aug 14 10:05:34 WAT 2023"
    assert java_date_string(datetime(2025, 3, 2, 3, 41, 6, tzinfo=timezone(timedelta(hours=5, minutes=30)))) \
        == "Sun Mar 02 03:41:06 GMT+05:30 2025"
    years = {str(datetime.now().year)}
    stamp = java_date_string()  # the default: the clock now, in local time
    years.add(str(datetime.now().year))  # the clock may pass a New Year between the readings
    assert stamp.rsplit(" ", 1)[1] in years and len(stamp.split()) == 6


def test_write_properties_atomically_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("old=1\n")
    write_properties_atomically(path, {"process.roles": "broker,controller", "node.id": "1"}, now=NOW)
    assert load_properties(path) == {"process.roles": "broker,controller", "node.id": "1"}
    assert [p.name for p in tmp_path.iterdir()] == ["server.properties"]  # no temp file left


def test_write_into_missing_directory_is_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot write") as e:
        write_properties_atomically(tmp_path / "no" / "x.properties", {"a": "b"}, now=NOW)
    assert str(tmp_path / "no" / "x.properties") in str(e.value)


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_text, _text, max_size=8), st.booleans(),
       st.sampled_from(["insertion", "sorted", "jdk-hash"]))
def test_properties_round_trip(props: dict[str, str], escape_unicode: bool, order: str) -> None:
    text = dump_properties(props, "any comment\nover lines", now=NOW, key_order=order,  # type: ignore[arg-type]
                           escape_unicode=escape_unicode)
    assert parse_properties(text) == props
    if escape_unicode:
        assert text.isascii()


# ------------------------------------------------------------------ Kafka uuids


def test_kafka_uuid_known_values() -> None:
    assert uuid_to_kafka(None) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_kafka(ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_to_kafka(METADATA_TOPIC_ID) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert kafka_to_uuid("AAAAAAAAAAAAAAAAAAAAAQ") == uuid.UUID(int=1)
    assert kafka_to_uuid("AAAAAAAAAAAAAAAAAAAAAQ==") == uuid.UUID(int=1)  # Java accepts padding


@pytest.mark.parametrize("bad", ["", "short", "A" * 21, "A" * 23, "A" * 25, "AAAAAAAAAAAAAAAAAAAA+/",
                                 "AAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAÄ"])
def test_kafka_to_uuid_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="uuid"):
        kafka_to_uuid(bad)


@given(st.integers(0, (1 << 128) - 1))
def test_kafka_uuid_round_trip(n: int) -> None:
    u = uuid.UUID(int=n)
    text = uuid_to_kafka(u)
    assert len(text) == 22 and kafka_to_uuid(text) == u


def test_random_kafka_uuid() -> None:
    ids = {random_kafka_uuid() for _ in range(200)}
    assert len(ids) == 200
    assert not ids & RESERVED_UUIDS
    assert not any(uuid_to_kafka(u).startswith("-") for u in ids)


# ------------------------------------------------------------------ meta.properties


def test_meta_properties_round_trip_v1(tmp_path: Path) -> None:
    meta = MetaProperties(1, "jhCzCarDSyqr9FkZhIbmYQ", 7, random_kafka_uuid(), {"custom": "x y"})
    path = write_meta_properties(tmp_path, meta, now=NOW)
    assert path == tmp_path / "meta.properties"
    assert read_meta_properties(tmp_path) == meta
    assert path.read_text().startswith("#\n#Sun May 11 08:08:34 UTC 2025\n")


def test_meta_properties_round_trip_v0(tmp_path: Path) -> None:
    meta = MetaProperties(0, None, 5, None, {"node.id": "9"})  # node.id means nothing in v0
    write_meta_properties(tmp_path, meta, now=NOW, key_order="insertion")
    assert (tmp_path / "meta.properties").read_text().splitlines()[2:] == \
        ["version=0", "broker.id=5", "node.id=9"]
    assert read_meta_properties(tmp_path) == meta
    assert read_meta_properties(tmp_path).id_key == "broker.id"


def test_meta_properties_v0_without_broker_id(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\ncluster.id=abc\n")
    assert read_meta_properties(tmp_path) == MetaProperties(0, "abc", None, None, {})


def test_meta_properties_refuses_incomplete_v1(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="node_id"):
        write_meta_properties(tmp_path, MetaProperties(1, "c", None), now=NOW)


def test_missing_meta_properties(tmp_path: Path) -> None:
    with pytest.raises(StorageError) as e:
        read_meta_properties(tmp_path)
    assert str(e.value) == f"no meta.properties in {tmp_path}: not a formatted Kafka log directory"


@pytest.mark.parametrize("content, reason", [
    ("", "missing required key 'version'"),
    ("\x00\x01garbage", "not a properties file: line 1 holds the control byte 0x00"),  # binary, refused as such
    ("node.id=1\ncluster.id=c\n", "missing required key 'version'"),
    ("version=2\nnode.id=1\ncluster.id=c\n", "unknown meta.properties version 2"),
    ("version=one\n", "'version' is not a 32-bit integer"),
    ("version=1\ncluster.id=c\n", "missing required key 'node.id'"),
    ("version=1\nnode.id=1\n", "missing required key 'cluster.id'"),
    ("version=1\nnode.id=x1\ncluster.id=c\n", "'node.id' is not a 32-bit integer"),
    ("version=1\nnode.id=99999999999\ncluster.id=c\n", "'node.id' is not a 32-bit integer"),
    ("version=0\nbroker.id=-\n", "'broker.id' is not a 32-bit integer"),
    ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", "bad 'directory.id'"),
])
def test_bad_meta_properties(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "meta.properties"
    path.write_text(content)
    with pytest.raises(StorageError) as e:
        read_meta_properties(path)
    assert str(path) in str(e.value) and reason in str(e.value)


@pytest.mark.parametrize("content, where", [
    (bytes(range(256)) * 8, "line 1 holds the control byte 0x00"),
    (b"security.protocol=SSL\nssl.keystore.location=\x00\x00\x01\n", "line 2 holds the control byte 0x00"),
    (b"a=1\n\x1b[31mred\n", "line 2 holds the control byte 0x1b"),
])
def test_binary_data_is_not_a_properties_file(tmp_path: Path, content: bytes, where: str) -> None:
    """A wrong --command-config (a keystore, random bytes) is refused, not read as garbage keys."""
    path = tmp_path / "client.properties"
    path.write_bytes(content)
    with pytest.raises(StorageError) as refused:
        load_properties(path)
    assert str(refused.value).startswith(f"{path}, byte offset ")
    assert str(refused.value).endswith(f": not a properties file: {where}, so this is binary data, not text")


def test_tabs_form_feeds_and_line_breaks_are_text(tmp_path: Path) -> None:
    path = tmp_path / "client.properties"
    path.write_bytes(b"a\t=\t1\r\n\x0cb:2\rc 3\n")
    assert load_properties(path) == {"a": "1", "b": "2", "c": "3"}
