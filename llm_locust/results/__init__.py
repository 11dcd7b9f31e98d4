"""The results side: the results folder, exact statistics, SLOs, the end of a run."""
