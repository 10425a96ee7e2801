"""Batching: 25,000 samples go in batches under the server's limit and are counted exactly once; a batch
answered 413 is halved and re-sent."""

from __future__ import annotations

import datetime as dt
from typing import Dict, List, Tuple

import httpx

from enterprise_ai import EnterpriseAI, Tenant

from _server import EaiServer
from helpers import deployment_row, recent_hour, sample, unique, usage_event

N = 25_000
WINDOW = 15


def recorder() -> Tuple[List[Tuple[str, str, int]], httpx.Client]:
    """An httpx client that records (method, path, status) of every answer."""
    seen: List[Tuple[str, str, int]] = []

    def on_response(response: httpx.Response) -> None:
        seen.append((response.request.method, response.request.url.path, response.status_code))

    return seen, httpx.Client(event_hooks={"response": [on_response]})


def many_samples(
    n: int, gpu: str, deployment: str
) -> Tuple[List[Dict[str, object]], dt.datetime, dt.datetime]:
    """``n`` samples of one GPU, 15 s windows, distinct timestamps ending at least an hour ago."""
    last = recent_hour(1)
    first = last - dt.timedelta(seconds=WINDOW * (n - 1))
    samples = [sample(gpu, deployment, first + dt.timedelta(seconds=WINDOW * k)) for k in range(n)]
    return samples, first - dt.timedelta(seconds=WINDOW), last


def test_25000_samples_in_batches_counted_once(server: EaiServer, admin: EnterpriseAI) -> None:
    deployment = unique("batch")
    samples, start, end = many_samples(N, unique("GPU"), deployment)
    assert len({s["timestamp"] for s in samples}) == N
    seen, http = recorder()
    with http, EnterpriseAI(base_url=server.url, api_key=server.admin_key, http_client=http) as c:
        result = c.finops.gpu_samples(samples=samples)
        assert (result.accepted, result.duplicates, result.requests) == (N, 0, 5)
        posts = [s for s in seen if s[1] == "/v1/finops/gpu/samples"]
        assert posts == [("POST", "/v1/finops/gpu/samples", 200)] * 5

        allocation = c.finops.gpu_allocation(start=start, end=end + dt.timedelta(seconds=1))
        row = deployment_row(allocation, deployment)
        assert row.samples == N and row.gpus == 1

        # Sending everything again stores nothing new: the server counts each sample once.
        again = c.finops.gpu_samples(samples=samples, batch_size=10_000)
        assert (again.accepted, again.duplicates, again.requests) == (N, N, 3)
        row = deployment_row(
            c.finops.gpu_allocation(start=start, end=end + dt.timedelta(seconds=1)), deployment
        )
        assert row.samples == N


def test_413_halving(small_batch_server: EaiServer) -> None:
    """EAI_MAX_BATCH=3000: the first 5,000-sample batch is refused (413, nothing stored), halved to 2,500,
    and the rest of the call goes on at that size."""
    n = 12_000
    deployment = unique("halve")
    samples, start, end = many_samples(n, unique("GPU"), deployment)
    seen, http = recorder()
    with (
        http,
        EnterpriseAI(
            base_url=small_batch_server.url, api_key=small_batch_server.admin_key, http_client=http
        ) as c,
    ):
        result = c.finops.gpu_samples(samples)
        statuses = [status for _, path, status in seen if path == "/v1/finops/gpu/samples"]
        assert statuses == [413, 200, 200, 200, 200, 200]  # 5000 refused, then 2500 x 4 + 2000
        assert (result.accepted, result.duplicates, result.requests) == (n, 0, 5)
        row = deployment_row(
            c.finops.gpu_allocation(start=start, end=end + dt.timedelta(seconds=1)), deployment
        )
        assert row.samples == n


def test_413_halving_events(small_batch_server: EaiServer) -> None:
    """Halving goes on until the server accepts: 7,000 -> 3,500 (413 again) -> 1,750."""
    seen, http = recorder()
    with (
        http,
        EnterpriseAI(
            base_url=small_batch_server.url, api_key=small_batch_server.admin_key, http_client=http
        ) as c,
    ):
        tenant = c.tenants.create(slug=unique("halve"), name="Halving")
        at = recent_hour(2)
        events = [usage_event("halve-dep", at, {"tokens_in": i}, tenant_id=tenant.id) for i in range(7000)]
        result = c.usage.events(events, batch_size=7000)
    statuses = [status for _, path, status in seen if path == "/v1/usage/events"]
    assert statuses == [413, 413, 200, 200, 200, 200]
    assert result.accepted == 7000 and result.requests == 4
    assert len(set(result.event_ids)) == 7000


def test_batch_size_for_events(server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant]) -> None:
    at = recent_hour(2)
    events = [
        usage_event(unique("ev"), at, {"tokens_in": 1}, tenant_id=tenants["globex"].id) for _ in range(101)
    ]
    seen, http = recorder()
    with (
        http,
        EnterpriseAI(base_url=server.url, api_key=server.admin_key, http_client=http, max_batch_size=40) as c,
    ):
        result = c.usage.events(events=events)
    assert result.accepted == 101 and result.requests == 3
    assert [s for s in seen if s[1] == "/v1/usage/events"] == [("POST", "/v1/usage/events", 200)] * 3
