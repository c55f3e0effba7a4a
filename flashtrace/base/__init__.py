"""Ground floor: what every other floor may use. Errors and exit codes (`errors`), safe file writes and
bounded reads (`fileio`), names that load on first use (`lazy`), durations in words (`units`). Imports nothing else of flashtrace."""
