"""``llm-locust report``: one self-contained HTML page of one or more results folders."""
