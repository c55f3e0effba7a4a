"""CLI subcommands: one module each (HELP, add_arguments, run)."""
