"""The metadata image, as Kafka's `metadata/image`: one immutable `MetadataImage`, changed
only by replaying records through `MetadataDelta`; partition registrations and their merge
rules; the image written back as a snapshot's records; loading an image from a snapshot or
a log directory; metadata.version levels."""
