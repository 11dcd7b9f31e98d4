"""The ``llm-locust`` subcommands that stand on several packages."""
