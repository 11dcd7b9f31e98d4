"""The OpenAI streaming protocol: SSE events, stream chunks. Pure: no network, no Locust."""
