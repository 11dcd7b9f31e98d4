"""Load models: stages, arrival processes, traces, the load plan. Pure: no network, no Locust."""
