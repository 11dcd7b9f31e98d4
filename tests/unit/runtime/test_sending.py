"""The sending side's helpers in process: ``--burst`` waves (runtime/bursts.py), ``--num-requests``
tickets (runtime/quota.py), requests spread over replicas (runtime/replicas.py), and Locust's
runner typed by role (runtime/runners.py). No request leaves the process: the run's ``send`` is
a recorder, as the front's would hand the request to the client."""

from __future__ import annotations

from locust.env import Environment

import time
from types import SimpleNamespace
from typing import Any

import gevent
import pytest

from llm_locust.client.streaming import ClientConfig
from llm_locust.config.burst import parse_burst
from llm_locust.config.role import Role
from llm_locust.load.replicas import Balancer
from llm_locust.record import RequestRecord
from llm_locust.runtime.bursts import BurstDispatcher
from llm_locust.runtime.quota import RequestQuota, share
from llm_locust.runtime.replicas import ReplicaClients, make_client
from llm_locust.runtime.runners import runner_of
from llm_locust.workload.base import RequestSpec


class _Run:
    """What the burst dispatcher needs of the node's front: a recorder of what it sends."""

    def __init__(self) -> None:
        self.stopping = False
        self.sent: list[tuple[float, int]] = []  # (when, wave)

    def stage_now(self) -> None:
        return None

    def new_source(self, stage: Any = None) -> Any:
        return SimpleNamespace(next_request=lambda: RequestSpec(prompt="hi", max_tokens=4))

    def new_record(self, spec: RequestSpec) -> RequestRecord:
        return RequestRecord(request_id=f"r{len(self.sent)}", wall_start=0.0, t_sent=0.0)

    def send(self, client: Any, body: dict[str, Any], record: RequestRecord, keep_text: bool = False) -> str:
        self.sent.append((time.time(), record.extra["burst"]))
        return ""


def test_bursts_send_this_workers_share_of_each_wave_on_the_plans_clock() -> None:
    """Waves of 5 every 0.3 s from t0 + 0.1 s; this is worker 1 of 2: 2 requests a wave."""
    spec = parse_burst("size=5,every=0.3s,start=0.1s,count=3")
    t0 = time.time()
    context = SimpleNamespace(
        plan=SimpleNamespace(burst=spec),
        client=ClientConfig(host="http://127.0.0.1:9", model="m", endpoint="completions"),
        worker_index=1,
        start_time=t0,
    )
    run = _Run()
    dispatcher = BurstDispatcher(context, run, lambda: (t0, 2))  # type: ignore[arg-type]
    deadline = time.monotonic() + 5
    while len(run.sent) < 6 and time.monotonic() < deadline:
        gevent.sleep(0.05)
    run.stopping = True
    dispatcher.finish(1.0)
    # worker 1 of 2 sends 5 // 2 = 2 of each wave (the remainder is worker 0's)
    assert sorted(wave for _, wave in run.sent) == [0, 0, 1, 1, 2, 2] and dispatcher.waves == 3
    for when, wave in run.sent:  # each wave leaves at its time on the plan's clock, never before
        assert t0 + 0.1 + 0.3 * wave <= when < t0 + 0.1 + 0.3 * wave + 1.0  # (late: a busy host)


def test_num_requests_shares_add_up_and_tickets_run_out() -> None:
    for n, workers in ((10, 3), (7, 7), (2, 5), (1000, 8)):
        parts = [share(n, slot, workers) for slot in range(workers)]
        assert sum(parts) == n and max(parts) - min(parts) <= 1
    environment = Environment(user_classes=[])
    environment.create_local_runner()
    context = SimpleNamespace(
        config=SimpleNamespace(load=SimpleNamespace(num_requests=5, num_users=1)),
        slot=1,
        workers=2,
        role=Role.WORKER,
        plan=SimpleNamespace(open_loop=False),
    )
    quota = RequestQuota(SimpleNamespace(environment=environment, context=context))  # type: ignore[arg-type]
    quota.on_test_start()
    assert quota.n == 5 and quota.left == 2  # slot 1 of 2: 5 // 2, the remainder is slot 0's
    assert [quota.take() for _ in range(4)] == [True, True, False, False]
    for _ in range(4):
        quota.count({})
    assert not quota.reached()
    quota.count({})
    assert quota.reached()


class _Stream:
    """A replica's client as the replicas module makes it: records which host served."""

    def __init__(self, config: ClientConfig, concurrency: int = 1) -> None:
        self.config = config

    def send(self, body: Any, record: RequestRecord, keep_text: bool = False) -> str:
        return self.config.host

    def close(self) -> None:
        pass


def test_requests_go_round_the_replicas_and_a_user_scope_stays_on_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import llm_locust.runtime.replicas as replicas

    monkeypatch.setattr(replicas, "StreamingClient", _Stream)
    hosts = ("http://127.0.0.1:8001", "http://127.0.0.1:8002", "http://127.0.0.1:8003")
    config = ClientConfig(host=hosts[0], model="m")
    assert isinstance(make_client(config, None, "request"), _Stream)  # one --host: one plain client
    per_request = ReplicaClients(config, Balancer(hosts, "round-robin", 0), "request")
    served = [
        per_request.send({}, RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0)) for i in range(6)
    ]
    assert served == [*hosts, *hosts]
    user = ReplicaClients(config, Balancer(hosts, "round-robin", 1), "user")
    records = [RequestRecord(request_id=str(i), wall_start=0.0, t_sent=0.0) for i in range(3)]
    assert {user.send({}, r) for r in records} == {hosts[1]} and {r.replica for r in records} == {hosts[1]}


def test_a_user_left_on_the_fuller_replica_moves_at_its_next_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scope ``user``: four users over two replicas, two stop on one: the next request of a user of
    the other replica goes to the emptied one, and the user stays there."""
    import llm_locust.runtime.replicas as replicas

    monkeypatch.setattr(replicas, "StreamingClient", _Stream)
    hosts = ("http://127.0.0.1:8001", "http://127.0.0.1:8002")
    config = ClientConfig(host=hosts[0], model="m")
    balancer = Balancer(hosts, "round-robin", 0)
    users = [ReplicaClients(config, balancer, "user") for _ in range(4)]

    def send(user: ReplicaClients) -> str:
        return user.send({}, RequestRecord(request_id="r", wall_start=0.0, t_sent=0.0))

    assert [send(u) for u in users] == [hosts[0], hosts[1], hosts[0], hosts[1]]
    users[0].close()
    users[2].close()
    assert balancer.in_flight == [0, 2]
    assert [send(users[1]), send(users[3])] == [hosts[0], hosts[1]]
    assert [send(users[1]), send(users[3])] == [hosts[0], hosts[1]] and balancer.in_flight == [1, 1]


def test_a_runner_is_there_from_init_on() -> None:
    environment = Environment(user_classes=[])
    with pytest.raises(RuntimeError, match="no runner"):
        runner_of(environment)
    runner = environment.create_local_runner()
    assert runner_of(environment) is runner
