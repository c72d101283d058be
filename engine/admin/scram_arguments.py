"""``kraftd storage format --add-scram MECHANISM=[name=...,password=...]`` (KIP-900), as Kafka's
ScramParser reads it: SCRAM credentials written into bootstrap.checkpoint, so a new cluster has
its first users (an admin to log in as) before any controller runs.

An argument names the mechanism (SCRAM-SHA-256 or SCRAM-SHA-512), then in brackets
comma-separated ``key=value`` pairs, a value optionally in double quotes: ``name`` (required),
``password`` or ``saltedpassword`` (base64; it needs ``salt``), ``salt`` (base64; default random)
and ``iterations`` (default 4096, within the mechanism's 4096..16384). Each argument becomes one
UserScramCredentialRecord with the stored and server keys; no password is written.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Iterable

from engine.common.errors import ConfigError
from engine.controller.scram_control import MAX_ITERATIONS, MECHANISM_CODES, MIN_ITERATIONS, scram_keys
from engine.net.sasl_mechanisms import scram_credential
from engine.records import metadata_records as m
from engine.records.kio_codec import i8, i32

DEFAULT_ITERATIONS = 4096


def scram_records(arguments: Iterable[str]) -> list[m.UserScramCredentialRecordV0]:
    """One UserScramCredentialRecord per ``--add-scram`` argument; ConfigError (Kafka's message,
    one line) for the first that does not read."""
    return [_record(*_mechanism_and_config(argument)) for argument in arguments]


def _mechanism_and_config(argument: str) -> tuple[str, str]:
    text = argument.strip()
    mechanism, equals, config = text.partition("=")
    if not equals:
        raise ConfigError(f"Failed to find equals sign in SCRAM argument '{text}'")
    if mechanism not in MECHANISM_CODES:
        raise ConfigError(f"The add-scram mechanism {mechanism} is not supported.")
    if not config.startswith("["):
        raise ConfigError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise ConfigError("Expected configuration string to end with ]")
    return mechanism, config[1:-1]


def _components(config: str) -> dict[str, str]:
    components = {}
    for component in config.split(","):
        key, equals, value = component.partition("=")
        if not equals:
            raise ConfigError(f"No equals sign found in SCRAM component: {component}")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        components[key] = value
    return components


def _base64(text: str, what: str) -> bytes:
    # Java's basic decoder: the RFC 4648 alphabet, padding optional, nothing else allowed
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"Failed to decode given {what}: {text}") from None


def _random_salt() -> bytes:
    """Kafka's ScramFormatter.secureRandomBytes: 130 random bits written in base 36, as ASCII."""
    value, digits = secrets.randbits(130), []
    while value:
        value, digit = divmod(value, 36)
        digits.append("0123456789abcdefghijklmnopqrstuvwxyz"[digit])
    return ("".join(reversed(digits)) or "0").encode()


def _record(mechanism: str, config: str) -> m.UserScramCredentialRecordV0:
    components = _components(config)
    name = components.pop("name", None)
    if name is None:
        raise ConfigError("You must supply 'name' to add-scram")
    salt_text = components.pop("salt", None)
    salt = _base64(salt_text, "salt") if salt_text is not None else None
    iterations_text = components.pop("iterations", None)
    iterations = DEFAULT_ITERATIONS
    if iterations_text is not None:
        try:
            iterations = int(iterations_text.strip())
        except ValueError:
            raise ConfigError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    if password is None and salted_text is None:
        raise ConfigError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if password is None and salt is None:
        raise ConfigError("You must supply 'salt' with 'saltedpassword' to add-scram")
    salted = _base64(salted_text, "saltedPassword") if password is None and salted_text is not None else None
    if components:
        raise ConfigError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise ConfigError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using "
                          f"{mechanism.replace('-', '_')}")
    if iterations > MAX_ITERATIONS:
        raise ConfigError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using "
                          f"{mechanism.replace('-', '_')}")
    salt = _random_salt() if salt is None else salt
    code = MECHANISM_CODES[mechanism]
    if salted is not None:
        stored_key, server_key = scram_keys(code, salted)
    else:
        try:
            credential = scram_credential(mechanism, password, salt=salt, iterations=iterations)
        except ValueError as err:  # an empty password: Kafka's ScramFormatter cannot key an HMAC with it
            raise ConfigError(f"{err} for add-scram using {mechanism.replace('-', '_')}") from None
        stored_key, server_key = credential.stored_key, credential.server_key
    return m.UserScramCredentialRecordV0(name=name, mechanism=i8(code), salt=salt, stored_key=stored_key,
                                         server_key=server_key, iterations=i32(iterations))


__all__ = ["DEFAULT_ITERATIONS", "scram_records"]
