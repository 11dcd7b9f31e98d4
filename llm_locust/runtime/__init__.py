"""Locust wiring: the run, the user, the shape, open-loop dispatch, worker to master shipping."""
