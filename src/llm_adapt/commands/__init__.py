"""One module per group of subcommands; each exposes `add_*_parser` builders and `cmd_*` handlers."""
