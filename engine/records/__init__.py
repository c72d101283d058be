"""Records and messages: what Kafka's `clients` module does for the metadata log.

The one door to kio (`kio_codec`), the bounds walk that guards it, every metadata record type
and version, record framing and control records, record batches v2 with CRC32C and compression,
and the JSON form Kafka's dump tool prints. Nothing here touches a file or a socket.
"""
