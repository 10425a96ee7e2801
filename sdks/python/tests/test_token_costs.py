"""Cost per token and cost over time, with the sync and the async client, against the real server (the case
of crates/api/tests/http/token_costs.rs): a shared deployment at 10 USD per GPU-hour for two hours (20.00),
tenant A 500 tokens in + 200 out per hour, tenant B 300 in per hour (70/30 in tokens)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import AsyncIterator, Union

import pytest

from enterprise_ai import (
    AllocationPolicy,
    AllocationSeries,
    AsyncEnterpriseAI,
    EnterpriseAI,
    PermissionDeniedError,
    SeriesTotal,
    TokenCost,
    TokenCostList,
    ValidationError,
)

from _server import EaiServer
from helpers import hour_of_samples, maybe, recent_hour, unique, usage_event

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"


@pytest.fixture(params=["sync", "async"])
async def client(request: pytest.FixtureRequest, server: EaiServer) -> AsyncIterator[AnyClient]:
    """A platform_admin client, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as ac:
            yield ac


def other(c: AnyClient, server: EaiServer, api_key: str) -> AnyClient:
    if isinstance(c, AsyncEnterpriseAI):
        return AsyncEnterpriseAI(base_url=server.url, api_key=api_key)
    return EnterpriseAI(base_url=server.url, api_key=api_key)


async def close(c: AnyClient) -> None:
    if isinstance(c, AsyncEnterpriseAI):
        await c.close()
    else:
        c.close()


@dataclass
class Shared:
    deployment: str
    tenant_a: str
    tenant_b: str
    start: dt.datetime
    end: dt.datetime


async def shared_deployment_of_two_tenants(client: AnyClient, server: EaiServer) -> Shared:
    """Two hours of a deployment of the test's own at a flat 10 USD per GPU-hour; two fresh tenants."""
    deployment = unique("vllm-shared")
    hour = recent_hour(hours_ago=4)
    policy = await maybe(
        client.finops.create_allocation_policy(
            name="flat",
            deployment_pattern=deployment,
            currency="USD",
            gpu_hourly_cost=10,
            effective_from="2020-01-01",
        )
    )
    stored = await maybe(client.finops.get_allocation_policy(policy.id))
    assert isinstance(stored, AllocationPolicy)
    assert stored.output_token_weight == Decimal("2.5")  # the default
    gpu = unique("GPU")
    samples = hour_of_samples(gpu, deployment, hour, utilization=0.82)
    samples += hour_of_samples(gpu, deployment, hour + dt.timedelta(hours=1), utilization=0.82)
    assert (await maybe(client.finops.gpu_samples(samples))).accepted == 480

    tenants = []
    for name in ("a", "b"):
        t = await maybe(client.tenants.create(slug=unique(f"tok-{name}"), name=f"Tokens {name}"))
        tenants.append(t.id)
    for tenant_id, units in zip(tenants, ({"tokens_in": 500, "tokens_out": 200}, {"tokens_in": 300})):
        key = await maybe(client.auth.create_api_key(role="developer", tenant_id=tenant_id))
        developer = other(client, server, key.key)
        events = [
            usage_event(deployment, hour + dt.timedelta(hours=h, minutes=10), dict(units)) for h in (0, 1)
        ]
        assert (await maybe(developer.usage.events(events))).accepted == 2
        await close(developer)
    return Shared(deployment, tenants[0], tenants[1], hour, hour + dt.timedelta(hours=2))


def row(rows: TokenCostList, deployment: str) -> TokenCost:
    r = rows.deployment(deployment)
    assert r is not None, f"no row for {deployment}: {rows.raw}"
    return r


async def test_token_costs_split_the_allocation_by_weight(client: AnyClient, server: EaiServer) -> None:
    s = await shared_deployment_of_two_tenants(client, server)

    # The deployment: 20.00 over 1,600 in and 400 out, no measured time: an output token weighs 2.5 input
    # tokens, input 20 x 1600 / 2600 = 12.307.. -> 12.31, output the rest.
    costs = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end))
    assert isinstance(costs, TokenCostList)
    assert (costs.basis, costs.aggregate) == ("allocation", "deployment")
    assert (costs.from_, costs.to) == (s.start, s.end)
    d = row(costs, s.deployment)
    assert isinstance(d.cost, Decimal) and d.cost == Decimal("20.00") and str(d.cost) == "20.00"
    assert d.cost_money.currency == "USD"
    assert d.allocation_method == "weight" and d.token_source == "usage_events"
    assert (d.tokens_in, d.tokens_out, d.tokens) == (Decimal(1600), Decimal(400), Decimal(2000))
    assert d.output_token_weight == Decimal("2.5")
    assert (str(d.input_cost), str(d.output_cost)) == ("12.31", "7.69")
    assert str(d.cost_per_mtok) == "10000.0000"
    assert (str(d.input_cost_per_mtok), str(d.output_cost_per_mtok)) == ("7693.7500", "19225.0000")
    assert d.tenant_id is None and d.deployments == []

    # Per tenant: each one's allocated cost over its own tokens; the tenants sum to the deployment's.
    by_tenant = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end, aggregate="tenant"))
    a, b = by_tenant.tenant(s.tenant_a), by_tenant.tenant(s.tenant_b)
    assert a is not None and b is not None, by_tenant.raw
    assert (str(a.cost), str(b.cost)) == ("14.00", "6.00")
    assert a.cost + b.cost == d.cost
    assert (str(a.input_cost), str(a.output_cost)) == ("7.00", "7.00")
    assert (str(b.input_cost), str(b.output_cost)) == ("6.00", "0.00")
    assert b.output_cost_per_mtok is None  # no output token: no rate
    assert [x.deployment_id for x in a.deployments] == [s.deployment]
    assert a.deployments[0].tenant_id == s.tenant_a and a.deployments[0].cost == Decimal("14.00")

    # The usage basis keeps the busy GPU-seconds only: 82 % of 20.00.
    usage = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end, basis="usage"))
    assert usage.basis == "usage" and row(usage, s.deployment).cost == Decimal("16.40")

    # A tenant's view: its share only.
    scoped = await maybe(
        client.with_options(tenant=s.tenant_b).finops.gpu_token_costs(start=s.start, end=s.end)
    )
    assert [(r.deployment_id, str(r.cost)) for r in scoped] == [(s.deployment, "6.00")]

    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end, basis="list", aggregate="pod"))
    assert err.value.fields == ["basis", "aggregate"]


async def test_allocation_series_steps_sum_to_the_period(client: AnyClient, server: EaiServer) -> None:
    s = await shared_deployment_of_two_tenants(client, server)
    series = await maybe(client.finops.gpu_allocation_series(start=s.start, end=s.end, step="hour"))
    assert isinstance(series, AllocationSeries) and series.step == "hour"
    assert len(series.steps) == 2
    assert [(st.from_, st.to) for st in series.steps] == [
        (s.start, s.start + dt.timedelta(hours=1)),
        (s.start + dt.timedelta(hours=1), s.end),
    ]
    rows = [st.deployment(s.deployment) for st in series.steps]
    assert all(r is not None for r in rows)
    costs = [r.cost for r in rows if r is not None]
    assert [str(c) for c in costs] == ["10.00", "10.00"]
    assert sum(c for c in costs if c is not None) == Decimal("20.00")
    assert [r.tokens for r in rows if r is not None] == [1000, 1000]
    # 10.00 over 1,000 tokens in each hour.
    assert [str(r.cost_per_mtok) for r in rows if r is not None] == ["10000.0000", "10000.0000"]
    assert all(isinstance(r.cost_per_mtok, Decimal) for r in rows if r is not None)

    # Every column of the steps sums to the period's totals.
    total = series.total("USD")
    assert isinstance(total, SeriesTotal)
    for col in ("cost", "allocated", "unallocated"):
        summed = sum((getattr(t, col) for t in (st.total("USD") for st in series.steps) if t), Decimal(0))
        assert summed == getattr(total, col), col

    # A tenant's view: tenant A's share in each step (7.00), its own tokens; the default step is a day.
    a_view = client.with_options(tenant=s.tenant_a)
    mine = await maybe(a_view.finops.gpu_allocation_series(start=s.start, end=s.end, step="hour"))
    step_totals = [st.total("USD") for st in mine.steps]
    assert [str(t.cost) if t else None for t in step_totals] == ["7.00", "7.00"]
    a_rows = [st.deployment(s.deployment) for st in mine.steps]
    assert [str(r.cost_per_mtok) if r else None for r in a_rows] == ["10000.0000", "10000.0000"]
    mine_total = mine.total()
    assert mine_total is not None and str(mine_total.cost) == "14.00"
    assert mine.tokens == 1400 and (mine.tokens_in, mine.tokens_out) == (Decimal(1000), Decimal(400))
    daily = await maybe(a_view.finops.gpu_allocation_series(start=s.start, end=s.end))
    day_totals = [st.total() for st in daily.steps]
    assert daily.step == "day" and sum((t.cost for t in day_totals if t), Decimal(0)) == Decimal("14.00")

    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_allocation_series(start=s.start, end=s.end, step="minute"))
    assert err.value.fields == ["step"]


async def test_a_sampler_posts_vllm_counters_without_a_tenant(client: AnyClient, server: EaiServer) -> None:
    s = await shared_deployment_of_two_tenants(client, server)
    key = await maybe(client.auth.create_api_key(role="sampler"))
    sampler = other(client, server, key.key)
    counters = usage_event(
        s.deployment,
        s.start + dt.timedelta(minutes=30),
        {
            "tokens_in": 10000,
            "tokens_out": 2000,
            "cached_tokens_in": 4000,
            "prefill_seconds": 30,
            "decode_seconds": 90,
            "requests": 40,
        },
        source="vllm",
        event_id=str(uuid.uuid4()),
    )
    counters["model"] = {"provider": "vllm", "name": LLAMA}
    assert "tenant_id" not in counters
    assert (await maybe(sampler.usage.events([counters]))).accepted == 1
    assert (await maybe(sampler.usage.events([counters]))).accepted == 1  # re-sent: counted once

    # vLLM's tokens measure the split (input 20 x 30 / 120 = 5.00) and never weigh the tenants (still 70/30).
    costs = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end))
    d = row(costs, s.deployment)
    assert (d.token_source, d.allocation_method, d.model) == ("vllm", "compute_time", LLAMA)
    assert (d.tokens, d.effective_tokens_in, d.cached_tokens_in) == (
        Decimal(12000),
        Decimal(6000),
        Decimal(4000),
    )
    assert (str(d.input_cost), str(d.output_cost), str(d.cost_per_mtok)) == ("5.00", "15.00", "1666.6667")
    assert d.output_token_weight == 9
    by_tenant = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end, aggregate="tenant"))
    a = by_tenant.tenant(s.tenant_a)
    assert a is not None and (str(a.cost), str(a.input_cost), str(a.output_cost)) == (
        "14.00",
        "2.00",
        "12.00",
    )
    by_model = await maybe(client.finops.gpu_token_costs(start=s.start, end=s.end, aggregate="model"))
    m = by_model.model(LLAMA)  # the model's total (other tests serve it too), with its rows per deployment
    assert m is not None and m.deployment_id is None and m.cost >= Decimal("20.00")
    mine = [x for x in m.deployments if x.deployment_id == s.deployment]
    assert [(x.model, str(x.cost)) for x in mine] == [(LLAMA, "20.00")]
    assert sum((x.cost for x in m.deployments), Decimal(0)) == m.cost

    # A sampler posts nothing that names a tenant.
    gateway = usage_event(s.deployment, s.start, {"tokens_in": 1}, tenant_id=s.tenant_a)
    with pytest.raises(PermissionDeniedError):
        await maybe(sampler.usage.events([gateway]))
    await close(sampler)


async def test_output_token_weight_is_a_policy_field(client: AnyClient) -> None:
    pattern = unique("otw") + "-*"
    created = await maybe(
        client.finops.create_allocation_policy(
            name="weighted",
            deployment_pattern=pattern,
            gpu_hourly_cost="1",
            output_token_weight=Decimal("4.25"),
        )
    )
    p = await maybe(client.finops.get_allocation_policy(created.id))
    assert p.output_token_weight == Decimal("4.25") and isinstance(p.output_token_weight, Decimal)
    change = await maybe(client.finops.supersede_allocation_policy(created.id, output_token_weight="3"))
    assert change.closed.output_token_weight == Decimal("4.25")
    assert change.opened.output_token_weight == Decimal("3")
    with pytest.raises(ValidationError) as err:
        await maybe(
            client.finops.create_allocation_policy(
                name="too light", deployment_pattern=pattern, gpu_hourly_cost="1", output_token_weight="0.05"
            )
        )
    assert err.value.fields == ["output_token_weight"]
