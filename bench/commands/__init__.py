"""The subcommands of `python -m bench`, one module each: `add_parser()` declares its
arguments, `command()` runs it and returns the exit code. `common` holds what they share."""
