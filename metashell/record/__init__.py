"""metashell record: the flight recorder of a cluster's metadata log (docs/recorder.md)."""
