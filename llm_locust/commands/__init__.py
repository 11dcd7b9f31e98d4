"""The ``llm-locust`` subcommands that stand on the packages below them: ``capacity`` (a
package: one search per plan, then the plans compared), ``calibrate``, ``predict``, ``rejudge``,
``demo``, ``workload`` (it prints the very body the client sends, so it stands above the
client). ``llm_locust/cli.py`` dispatches to them; a subcommand that uses one package alone
lives in it (``sim/cli.py``, ``report/cli.py``)."""
