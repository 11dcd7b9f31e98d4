"""``llm-locust capacity``: one headless ``run --search`` per plan, then the plans compared.

``cli`` (the command), ``host`` (how the plans share this host), ``job_env`` (a plan's search as
its Kubernetes Job's settings), ``sim_clock`` (what is read of a simulated target: its speedup
and its clock), ``predicted`` (plans predicted from a calibrated engine model)."""
