"""Live attach: metashell's tools on a running quorum, as an anonymous Raft observer (replica id -1)."""
