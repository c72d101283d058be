"""What every part of the engine shares, as Kafka's `common` packages: the one-line errors,
Kafka's base64 UUID text, Java `.properties` files, small-file reads and atomic replace, and the guarded command-line runner."""
