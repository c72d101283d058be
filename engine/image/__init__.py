"""The metadata image, as Kafka's `metadata/image`: one immutable `MetadataImage` of one image
per domain, changed only by replaying records through `MetadataDelta` and the domains' deltas,
which say what they changed (the change set); partition registrations and their merge
rules; the image written back as a snapshot's records; loading an image from a snapshot or
a log directory; metadata.version levels."""
