"""Command-line options and the typed run configuration."""
