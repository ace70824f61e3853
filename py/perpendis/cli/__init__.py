"""Command-line front end: argument parsing and exit codes (docs/architecture.md)."""
