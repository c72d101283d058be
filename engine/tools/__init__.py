"""The `kraftd` command line: its parser and subcommands (`cli`) and `kraftd quorum`'s flags and output
(`quorum_tool`). The work is in the product packages and, for bench, sim, fuzz and cluster, the harness."""
