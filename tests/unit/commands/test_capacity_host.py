"""How ``llm-locust capacity`` shares the host: plans at once x load processes per plan."""

from __future__ import annotations

import socket

import pytest

from llm_locust.commands.capacity.host import host_parallel, master_port_args, oversubscribed, worker_args


@pytest.mark.parametrize(
    ("plans", "cores", "workers", "expected"),
    [
        (3, 2, None, 1),  # one load process a plan: 2 cores each
        (3, 8, None, 3),
        (3, 8, 2, 2),  # two workers a plan: 4 cores each
        (3, 8, 4, 1),
        (3, 64, 4, 3),  # never more than the plans
        (3, 2, 2, 1),  # never fewer than one
    ],
)
def test_plans_at_once_shrink_with_the_workers_of_each(
    plans: int, cores: int, workers: int | None, expected: int
) -> None:
    assert host_parallel(plans, cores, workers) == expected


def test_more_load_processes_than_cores_is_warned_about() -> None:
    assert oversubscribed(1, 2, 2) is None and oversubscribed(2, None, 2) is None
    warning = oversubscribed(2, 2, 2)
    assert warning is not None and warning.startswith("4 load processes (2 plans at once x 2) on 2 cores")
    assert oversubscribed(3, None, 2) is not None


def test_a_plan_s_master_gets_a_free_port_of_its_own() -> None:
    assert worker_args(None) == [] and worker_args(3) == ["--processes", "3"]
    args = master_port_args()
    assert args[0::2] == ["--master-bind-port", "--master-port"] and args[1] == args[3]
    with socket.socket() as s:  # free: it can be bound
        s.bind(("127.0.0.1", int(args[1])))
