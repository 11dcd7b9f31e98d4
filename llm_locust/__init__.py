"""llm-locust: a Locust-based load generator for OpenAI-compatible LLM servers."""

__version__ = "0.1.0"
