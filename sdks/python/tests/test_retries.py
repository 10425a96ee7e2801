"""Retries through a fault proxy in front of the real server: 503 and 429 are retried, a retry never counts
samples or events twice, and what must not be retried is not."""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal
from typing import Dict

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    EnterpriseAI,
    RateLimitError,
    ServiceUnavailableError,
    Tenant,
    ValidationError,
)

from _server import EaiServer, FaultProxy
from helpers import deployment_row, hour_of_samples, policy, recent_hour, sample, unique, usage_event

SAMPLES = "/v1/finops/gpu/samples"
EVENTS = "/v1/usage/events"


def fast_client(proxy: FaultProxy, server: EaiServer, **kwargs: object) -> EnterpriseAI:
    return EnterpriseAI(
        base_url=proxy.url,
        api_key=server.admin_key,
        retry_base_delay=0.01,
        retry_max_delay=0.05,
        **kwargs,  # type: ignore[arg-type]
    )


def test_503_is_retried_and_samples_count_once(
    proxy: FaultProxy, server: EaiServer, admin: EnterpriseAI
) -> None:
    deployment = unique("r503")
    hour = recent_hour(4)
    samples = hour_of_samples(unique("GPU"), deployment, hour)
    proxy.fail(times=2, status=503, code="unavailable", method="POST", path_prefix=SAMPLES)
    with fast_client(proxy, server, max_retries=3) as c:
        result = c.finops.gpu_samples(samples)
    attempts = proxy.requests("POST", SAMPLES)
    assert [a.status for a in attempts] == [503, 503, 200]
    assert (result.accepted, result.duplicates, result.requests) == (240, 0, 1)
    row = deployment_row(
        admin.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1)), deployment
    )
    assert row.samples == 240 and row.gpu_hours == Decimal(1)


def test_lost_answer_retry_counts_stamped_samples_once(
    proxy: FaultProxy, server: EaiServer, admin: EnterpriseAI
) -> None:
    """The first attempt reaches the server (stored) but its answer is lost (503 from the proxy): the retry
    re-sends the same samples, with the timestamp the SDK stamped once and the same Idempotency-Key, so the
    server answers the first answer again and counts them once."""
    deployment = unique("lost")
    gpus = [unique("GPU") for _ in range(30)]
    unstamped = [sample(g, deployment, None) for g in gpus]  # no timestamp: the SDK stamps them
    proxy.fail(times=1, status=503, code="unavailable", forward=True, method="POST", path_prefix=SAMPLES)
    with fast_client(proxy, server, max_retries=2) as c:
        result = c.finops.gpu_samples(samples=unstamped)
    seen = proxy.requests("POST", SAMPLES)
    assert [(s.status, s.forwarded) for s in seen] == [(503, True), (200, True)]
    # The retry carried the first attempt's key: the first answer again (30 new), not 30 duplicates.
    assert (result.accepted, result.duplicates, result.new) == (30, 0, 30)
    assert all("timestamp" not in s for s in unstamped)  # the caller's dicts are untouched
    now = dt.datetime.now(dt.timezone.utc)
    row = deployment_row(
        admin.finops.gpu_allocation(start=now - dt.timedelta(hours=1), end=now + dt.timedelta(hours=1)),
        deployment,
    )
    assert row.samples == 30 and row.gpus == 30


def test_lost_answer_retry_counts_events_once(
    proxy: FaultProxy, server: EaiServer, admin: EnterpriseAI, tenants: Dict[str, Tenant]
) -> None:
    """Same for usage events: the SDK's event_id is chosen once, so the retry replaces, never doubles. The
    allocation shows it: the tenant's GPU-seconds are what its events claim, once."""
    acme = tenants["acme"]
    deployment = unique("lostev")
    hour = recent_hour(5)
    admin.finops.gpu_samples(hour_of_samples(unique("GPU"), deployment, hour))
    admin.finops.create_allocation_policy(policy(deployment))
    events = [
        usage_event(deployment, hour + dt.timedelta(minutes=10), {"gpu_seconds": 10}, tenant_id=acme.id)
        for _ in range(12)
    ]
    proxy.fail(times=1, status=503, code="unavailable", forward=True, method="POST", path_prefix=EVENTS)
    with fast_client(proxy, server, max_retries=2) as c:
        result = c.usage.events(events)
    assert [s.status for s in proxy.requests("POST", EVENTS)] == [503, 200]
    assert result.accepted == 12 and len(set(result.event_ids)) == 12
    allocation = admin.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    (item,) = allocation.items_for(tenant_id=acme.id, deployment_id=deployment)
    assert item.gpu_seconds == Decimal(120)  # 12 x 10, not 240


def test_429_with_retry_after_is_honoured(proxy: FaultProxy, server: EaiServer) -> None:
    proxy.fail(times=1, status=429, code="rate_limited", headers={"Retry-After": "1"}, method="GET")
    with fast_client(proxy, server, max_retries=2) as c:
        t0 = time.monotonic()
        allocation = c.finops.gpu_allocation()
        elapsed = time.monotonic() - t0
    assert allocation.period
    assert [s.status for s in proxy.requests("GET")] == [429, 200]
    assert elapsed >= 0.95  # waited Retry-After, not the 10 ms backoff


def test_retry_after_above_the_cap_is_not_waited_for(proxy: FaultProxy, server: EaiServer) -> None:
    proxy.fail(times=1, status=429, code="rate_limited", headers={"Retry-After": "3600"})
    with fast_client(proxy, server, max_retries=1, max_retry_after=0.2) as c:
        t0 = time.monotonic()
        with pytest.raises(RateLimitError) as info:
            c.auth.whoami()
        assert time.monotonic() - t0 < 5
    assert info.value.retry_after == 3600
    assert len(proxy.requests()) == 1


def test_gives_up_after_max_retries(proxy: FaultProxy, server: EaiServer) -> None:
    proxy.fail(times=5, status=503, code="unavailable")
    with fast_client(proxy, server, max_retries=2) as c:
        with pytest.raises(ServiceUnavailableError):
            c.tenants.list()
    assert len(proxy.requests()) == 3  # 1 + 2 retries
    proxy.fail(times=5, status=503, code="unavailable")
    with fast_client(proxy, server, max_retries=0) as c:
        with pytest.raises(ServiceUnavailableError):
            c.tenants.list()
    assert len(proxy.requests()) == 4


def test_4xx_is_never_retried(proxy: FaultProxy, server: EaiServer) -> None:
    with fast_client(proxy, server, max_retries=3) as c:
        with pytest.raises(ValidationError):
            c.finops.create_allocation_policy(name="no cost")
    assert [s.status for s in proxy.requests()] == [422]


def test_creates_are_retried_too(proxy: FaultProxy, server: EaiServer) -> None:
    """Every POST carries an Idempotency-Key (the same on its retries), so a create is retried like a read:
    after a 500 and a 503 it is made once."""
    pattern = unique("retried") + "-*"
    proxy.fail(times=1, status=500, code="internal", method="POST")
    proxy.fail(times=1, status=503, code="unavailable", method="POST")
    with fast_client(proxy, server, max_retries=3) as c:
        created = c.finops.create_allocation_policy(policy(pattern))
        assert [s.status for s in proxy.requests("POST")] == [500, 503, 201]
        assert sum(p.deployment_pattern == pattern for p in c.finops.list_allocation_policies()) == 1
        assert created.status == "active"
        proxy.fail(times=1, status=500, code="internal", method="GET")
        assert c.finops.list_allocation_policies()


async def test_async_retries(proxy: FaultProxy, server: EaiServer, admin: EnterpriseAI) -> None:
    deployment = unique("async503")
    hour = recent_hour(6)
    samples = hour_of_samples(unique("GPU"), deployment, hour)[:40]
    proxy.fail(times=2, status=503, code="unavailable", method="POST", path_prefix=SAMPLES)
    async with AsyncEnterpriseAI(
        base_url=proxy.url, api_key=server.admin_key, retry_base_delay=0.01, max_retries=3
    ) as c:
        result = await c.finops.gpu_samples(samples=samples)
        proxy.fail(times=1, status=429, code="rate_limited", headers={"Retry-After": "1"}, method="GET")
        await c.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    assert [s.status for s in proxy.requests("POST", SAMPLES)] == [503, 503, 200]
    assert [s.status for s in proxy.requests("GET")] == [429, 200]
    assert (result.accepted, result.duplicates) == (40, 0)
    row = deployment_row(
        admin.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1)), deployment
    )
    assert row.samples == 40
