"""SASL/SCRAM's credential lookup over a controller's own metadata (KIP-554): the listener asks
``(mechanism, user)`` at each handshake and is answered from the SCRAM credentials of
the image current at that moment, so a credential altered or deleted since start counts at the
next handshake. Here, not in engine.controller: the answer is engine.net's ScramCredential."""

from __future__ import annotations

from typing import Callable

from engine.controller.scram_control import MECHANISM_CODES
from engine.image.metadata_image import MetadataImage
from engine.net.channel_security import ScramCredential, ScramCredentialLookup


def scram_lookup(image: Callable[[], MetadataImage]) -> ScramCredentialLookup:
    """A lookup reading ``image()`` at every call; None for an unknown user or mechanism."""
    def lookup(mechanism: str, user: str) -> ScramCredential | None:
        code = MECHANISM_CODES.get(mechanism)
        credential = image().scram.get((code, user)) if code is not None else None
        if credential is None:
            return None
        return ScramCredential(salt=bytes(credential.salt), stored_key=bytes(credential.stored_key),
                               server_key=bytes(credential.server_key), iterations=int(credential.iterations))
    return lookup


__all__ = ["scram_lookup"]
