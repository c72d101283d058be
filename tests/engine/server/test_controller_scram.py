"""AlterUserScramCredentials (51) on the controller (Kafka's ScramControlManagerTest rhythm:
command, response, replay, state). The stored and server keys themselves are compared with
Kafka's own ScramFormatter live, in tests/differential/test_diff_scram_formatter.py."""

from __future__ import annotations

import pytest

from engine.controller.scram_control import COMMANDS, alter_user_scram_credentials, error_response, scram_keys
from engine.image.metadata_image import MetadataImage
from engine.net.channel_security import ScramCredential
from engine.server.scram_credentials import scram_lookup
from engine.records import metadata_records as m
from engine.records.kio_codec import ErrorCode, i8, i32, protocol_module
from engine.records.metadata_record_serde import decode_metadata_value, encode_metadata_value
from tests.controller_helpers import bootstrapped, context, replayed, request

_req = protocol_module("alter_user_scram_credentials", 0, "request")
SHA256, SHA512 = 1, 2
SALTED = b"salted-password"

def upsert(name: str, mechanism: int = SHA256, iterations: int = 8192, salt: bytes = b"salt") -> object:
    return _req.ScramCredentialUpsertion(name=name, mechanism=i8(mechanism), iterations=i32(iterations),
                                         salt=salt, salted_password=SALTED)


def delete(name: str, mechanism: int = SHA256) -> object:
    return _req.ScramCredentialDeletion(name=name, mechanism=i8(mechanism))


def alter(image: MetadataImage, deletions=(), upsertions=()):
    return alter_user_scram_credentials(context(image), request(
        "alter_user_scram_credentials", 0, deletions=tuple(deletions), upsertions=tuple(upsertions)))


def results(result) -> dict[str, tuple]:
    return {r.user: (r.error_code, r.error_message) for r in result.response.results}


OK = (ErrorCode.none, None)


def test_upsert_replay_then_delete():
    image = bootstrapped()
    result = alter(image, upsertions=[upsert("alice"), upsert("bob", SHA512, 4096, b"pepper")])
    assert results(result) == {"alice": OK, "bob": OK}
    assert result.atomic
    stored, server = scram_keys(SHA256, SALTED)
    assert result.records[0] == m.UserScramCredentialRecordV0(
        name="alice", mechanism=i8(SHA256), salt=b"salt", stored_key=stored, server_key=server, iterations=i32(8192))
    image = replayed(image, result)
    assert set(image.scram) == {(SHA256, "alice"), (SHA512, "bob")}
    assert image.scram[(SHA512, "bob")].iterations == 4096 and image.scram[(SHA512, "bob")].salt == b"pepper"

    # a second upsertion replaces the credential
    again = alter(image, upsertions=[upsert("alice", iterations=16384, salt=b"new")])
    image = replayed(image, again)
    assert image.scram[(SHA256, "alice")].iterations == 16384 and image.scram[(SHA256, "alice")].salt == b"new"

    removed = alter(image, deletions=[delete("alice")])
    assert results(removed) == {"alice": OK}
    assert removed.records == [m.RemoveUserScramCredentialRecordV0(name="alice", mechanism=i8(SHA256))]
    image = replayed(image, removed)
    assert set(image.scram) == {(SHA512, "bob")}
    for record in (*result.records, *removed.records):
        assert decode_metadata_value(encode_metadata_value(record)) == record
    # gone now: deleting it again is RESOURCE_NOT_FOUND
    assert results(alter(image, deletions=[delete("alice")]))["alice"][0] == ErrorCode.resource_not_found


def test_a_user_has_one_credential_per_mechanism():
    image = replayed(bootstrapped(), alter(bootstrapped(), upsertions=[upsert("carol", SHA256)]))
    image = replayed(image, alter(image, upsertions=[upsert("carol", SHA512)]))
    assert set(image.scram) == {(SHA256, "carol"), (SHA512, "carol")}
    # deleting the other mechanism's credential, which does not exist, is RESOURCE_NOT_FOUND
    image = replayed(image, alter(image, deletions=[delete("carol", SHA512)]))
    assert results(alter(image, deletions=[delete("carol", SHA512)]))["carol"][0] == ErrorCode.resource_not_found


@pytest.mark.parametrize("item, code, message", [
    (upsert(""), ErrorCode.unacceptable_credential, "Username must not be empty"),
    (upsert("u", mechanism=0), ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    (upsert("u", mechanism=3), ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    (upsert("u", iterations=4095), ErrorCode.unacceptable_credential, "Too few iterations"),
    (upsert("u", iterations=16385), ErrorCode.unacceptable_credential, "Too many iterations"),
    (delete(""), ErrorCode.unacceptable_credential, "Username must not be empty"),
    (delete("u", mechanism=-1), ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    (delete("u"), ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"),
])
def test_each_refusal(item, code, message):
    is_deletion = isinstance(item, _req.ScramCredentialDeletion)
    result = alter(bootstrapped(), deletions=[item] if is_deletion else [], upsertions=[] if is_deletion else [item])
    assert results(result) == {item.name: (code, message)}
    assert result.records == []


@pytest.mark.parametrize("iterations", [4096, 16384])
def test_the_iteration_bounds_are_inclusive(iterations):
    assert results(alter(bootstrapped(), upsertions=[upsert("u", iterations=iterations)])) == {"u": OK}


def test_a_user_altered_twice_is_a_duplicate_and_others_go_ahead():
    image = replayed(bootstrapped(), alter(bootstrapped(), upsertions=[upsert("dave"), upsert("erin")]))
    result = alter(image, deletions=[delete("dave"), delete("erin")],
                   upsertions=[upsert("dave", SHA512), upsert("frank"), upsert("grace"), upsert("grace", SHA512)])
    dup = (ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
    assert results(result) == {"erin": OK, "frank": OK, "dave": dup, "grace": dup}
    image = replayed(image, result)
    # dave is untouched; erin is deleted, frank added, grace not
    assert set(image.scram) == {(SHA256, "dave"), (SHA256, "frank")}


def test_a_failed_user_stays_failed_whatever_follows():
    # the first entry fails; later entries for the same user are not looked at
    result = alter(bootstrapped(), deletions=[delete("henry")], upsertions=[upsert("henry")])
    assert results(result) == {"henry": (ErrorCode.resource_not_found,
                                         "Attempt to delete a user credential that does not exist")}
    assert result.records == []


def test_before_3_5_iv2_scram_is_unsupported():
    image = bootstrapped("3.5-IV1")
    result = alter(image, upsertions=[upsert("ivy")], deletions=[delete("jack")])
    unsupported = (ErrorCode.unsupported_version, "The current metadata.version does not support SCRAM")
    assert results(result) == {"ivy": unsupported, "jack": unsupported}
    assert result.records == []
    assert results(alter(bootstrapped("3.5-IV2"), upsertions=[upsert("ivy")])) == {"ivy": OK}


def test_the_error_response_names_each_user_once():
    req = request("alter_user_scram_credentials", 0, deletions=(delete("a"),), upsertions=(upsert("a"), upsert("b")))
    response = error_response(req, ErrorCode.not_controller, "gone")
    assert [(r.user, r.error_code, r.error_message) for r in response.results] == \
        [("a", ErrorCode.not_controller, "gone"), ("b", ErrorCode.not_controller, "gone")]
    assert [(c.api_key, c.name, c.min_version, c.max_version, c.read_only) for c in COMMANDS] == \
        [(51, "alter_user_scram_credentials", 0, 0, False)]


def test_the_scram_lookup_reads_the_current_image_at_every_call() -> None:
    """SASL/SCRAM's lookup (what the controller's listener authenticates against) answers from
    whatever image is current: a credential added, then deleted, since the lookup was made."""
    images = [bootstrapped()]
    lookup = scram_lookup(lambda: images[-1])
    assert lookup("SCRAM-SHA-256", "alice") is None
    images.append(replayed(images[-1], alter(images[-1], upsertions=[upsert("alice")])))
    stored_key, server_key = scram_keys(SHA256, SALTED)
    assert lookup("SCRAM-SHA-256", "alice") == ScramCredential(b"salt", stored_key, server_key, 8192)
    assert lookup("SCRAM-SHA-512", "alice") is None and lookup("PLAIN", "alice") is None
    images.append(replayed(images[-1], alter(images[-1], deletions=[delete("alice")])))
    assert lookup("SCRAM-SHA-256", "alice") is None
