"""SCRAM's salted password, stored key and server key against Kafka's own ScramFormatter, for
random passwords (any Unicode, unpaired surrogates too), salts, iteration counts and both
mechanisms: ours in engine/net/sasl_mechanisms.py (salted_password, scram_credential: the
broker's and kraftd storage format's) and engine/controller/scram_control.py (scram_keys: the
controller's AlterUserScramCredentials, given a salted password)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import example, given, settings, strategies as st
from kafka_peer.harness import DIFF_EXAMPLES, KafkaRefused

from engine.controller.scram_control import MECHANISM_CODES, scram_keys
from engine.net.sasl_mechanisms import salted_password, scram_credential

pytestmark = pytest.mark.kafka

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
# cheap counts (Kafka's bounds, 4096..16384, as examples: thousands of rounds each would make
# the property slow), and below one, where Hi's loop does not run (Kafka computes one round)
ITERATIONS = st.integers(-3, 64)
PASSWORDS = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.sampled_from(MECHANISMS), PASSWORDS, st.binary(max_size=64), ITERATIONS)
# found by this test: Java writes an unpaired surrogate as '?' (ours raised UnicodeEncodeError),
# refuses an empty password (ours keyed an HMAC with nothing) and does one round below one
# iteration (ours raised ValueError)
@example("SCRAM-SHA-256", "a\ud800b", b"salt", 1)
@example("SCRAM-SHA-512", "", b"salt", 4096)
@example("SCRAM-SHA-256", "pw", b"", 0)
@example("SCRAM-SHA-256", "alice-secret", b"\x00" * 32, 4096)
@example("SCRAM-SHA-512", "p\u00e4ss \U0001F511", b"salt", 16384)
def test_salted_password_and_keys_are_kafkas(kafka_classes, mechanism, password, salt, iterations):
    try:
        kafkas = kafka_classes.call("ScramFormatter", mechanism=mechanism, password=password, salt=_b64(salt),
                                    iterations=iterations)
    except KafkaRefused as refused:
        assert password == "" and "Empty key" in refused.kafka_error, refused.kafka_error
        with pytest.raises(ValueError, match="must not be empty"):
            salted_password(mechanism, password, salt, iterations)
        with pytest.raises(ValueError, match="must not be empty"):
            scram_credential(mechanism, password, salt=salt, iterations=iterations)
        return
    salted = salted_password(mechanism, password, salt, iterations)
    credential = scram_credential(mechanism, password, salt=salt, iterations=iterations)
    assert _b64(salted) == kafkas["salted_password"]
    assert (_b64(credential.stored_key), _b64(credential.server_key)) == (kafkas["stored_key"], kafkas["server_key"])


@settings(max_examples=DIFF_EXAMPLES, deadline=None)
@given(st.sampled_from(MECHANISMS), st.binary(min_size=1, max_size=80))
def test_keys_of_a_salted_password_are_kafkas(kafka_classes, mechanism, salted):
    """AlterUserScramCredentials carries the salted password itself: the controller's keys."""
    kafkas = kafka_classes.call("ScramFormatter", mechanism=mechanism, salted_password=_b64(salted))
    stored, server = scram_keys(MECHANISM_CODES[mechanism], salted)
    assert (_b64(stored), _b64(server)) == (kafkas["stored_key"], kafkas["server_key"])
