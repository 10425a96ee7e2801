"""Exact money end to end: Decimal in, Decimal out, and the allocation's sums hold to the cent.

A server of its own, so that the tenant rows and shares hold only this module's data.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal
from typing import Dict, Iterator, Tuple

import pytest

from enterprise_ai import Allocation, AllocationPolicy, EnterpriseAI, Money

from _server import EaiServer
from conftest import ServerFactory
from helpers import hour_of_samples, policy, recent_hour, usage_event

CENT = Decimal("0.01")


@pytest.fixture(scope="module")
def money_world(
    make_server: ServerFactory,
) -> Iterator[Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]]]:
    srv: EaiServer = make_server(name="money")
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = c.tenants.create(slug="acme", name="Acme")
        globex = c.tenants.create(slug="globex", name="Globex")
        hour = recent_hour(3)
        # SPEC §3 worked example: 2 GPUs for an hour, half busy, 400 W; tokens split 70/30.
        c.finops.gpu_samples(
            hour_of_samples("GPU-77aa", "vllm-shared", hour)
            + hour_of_samples("GPU-88bb", "vllm-shared", hour)
        )
        # A dedicated deployment with awkward decimals.
        c.finops.gpu_samples(
            hour_of_samples(
                "GPU-99cc",
                "vllm-dedicated",
                hour,
                tenant_id=acme.id,
                power_w="350.5",
                utilization="0.37",
                memory_used_gb="33.3",
            )
        )
        # A shared deployment that is mostly idle: part of its cost stays unallocated.
        c.finops.gpu_samples(hour_of_samples("GPU-aadd", "vllm-idle", hour))
        created = c.finops.create_allocation_policy(
            policy(
                "vllm-*", gpu_hourly_cost=Decimal("2.10"), overhead_pct="18", energy_kwh_price=Decimal("0.21")
            )
        )
        at = hour + dt.timedelta(minutes=12)
        c.usage.events(
            [
                usage_event("vllm-shared", at, {"tokens_in": 6000, "tokens_out": 1000}, tenant_id=acme.id),
                usage_event("vllm-shared", at, {"tokens_in": 3000}, tenant_id=globex.id),
                usage_event("vllm-idle", at, {"gpu_seconds": "1234.5"}, tenant_id=globex.id),
            ]
        )
        allocation = c.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
        p = c.finops.list_allocation_policies().get(created.id)
        assert p is not None
        yield c, allocation, p, {"acme": acme.id, "globex": globex.id}


def test_everything_is_decimal(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    _, allocation, p, _ids = money_world
    assert all(type(v) is Decimal for v in (p.gpu_hourly_cost, p.overhead_pct, p.energy_kwh_price, p.pue))
    assert p.gpu_hourly_cost == Decimal("2.10") and str(p.gpu_hourly_cost) == "2.10"
    for item in allocation.items:
        assert isinstance(item.allocated, Money) and type(item.allocated.amount) is Decimal
        for q in (item.gpu_seconds, item.gpu_memory_gb_seconds, item.energy_wh):
            assert type(q) is Decimal
    for row in allocation.deployments:
        for q in (row.gpu_hours, row.busy_gpu_hours, row.estimated_gpu_seconds, row.energy_kwh, row.cost):
            assert type(q) is Decimal
    for t in allocation.tenants:
        assert type(t.share) is Decimal and type(t.gpu_seconds) is Decimal and type(t.cost.amount) is Decimal
    # JSON numbers are read digit for digit (a float would make 0.35 into 0.34999999999999997779...).
    dedicated = allocation.deployment("vllm-dedicated")
    assert dedicated is not None
    assert dedicated.energy_kwh == Decimal("0.3505") and dedicated.busy_gpu_hours == Decimal("0.37")
    assert type(allocation.raw["deployments"][0]["energy_kwh"]) in (Decimal, int)


def test_worked_example_to_the_cent(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    _, allocation, _p, ids = money_world
    shared = allocation.deployment("vllm-shared")
    assert shared is not None
    assert shared.gpu_hours == 2 and shared.busy_gpu_hours == 1 and shared.energy_kwh == Decimal("0.8")
    assert shared.cost == Decimal("5.19") and shared.allocated == Decimal("5.19")
    assert shared.unallocated == 0
    items = {i.tenant_id: i for i in allocation.items_for(deployment_id="vllm-shared")}
    assert items[ids["acme"]].allocated == Money(Decimal("3.63"), "EUR")
    assert items[ids["globex"]].allocated == Money(Decimal("1.56"), "EUR")
    assert items[ids["acme"]].gpu_seconds == Decimal(5040) and items[ids["globex"]].gpu_seconds == Decimal(
        2160
    )


def test_costs_follow_the_policy_exactly(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    """cost = round(gpu_hours x rate x (1 + overhead) + kWh x PUE x energy price, 2), in Decimal."""
    _, allocation, p, _ids = money_world
    for row in allocation.deployments:
        gpu = row.gpu_hours * p.gpu_hourly_cost * (1 + p.overhead_pct / 100)
        energy = row.energy_kwh * p.pue * p.energy_kwh_price
        assert row.cost == (gpu + energy).quantize(CENT, rounding=ROUND_HALF_UP), row


def test_sums_hold_to_the_cent(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    _, allocation, _p, ids = money_world
    assert {d.deployment_id for d in allocation.deployments} == {"vllm-shared", "vllm-dedicated", "vllm-idle"}
    for row in allocation.deployments:
        assert row.currency == "EUR"
        assert row.allocated + row.unallocated == row.cost, row
        items = allocation.items_for(deployment_id=row.deployment_id)
        assert sum((i.allocated.amount for i in items), Decimal(0)) == row.allocated, row
        daily = [d.cost.amount for d in allocation.daily if d.deployment_id == row.deployment_id]
        assert sum(daily, Decimal(0)) == row.cost
        for amount in [
            row.cost,
            row.allocated,
            row.unallocated,
            *daily,
            *(i.allocated.amount for i in items),
        ]:
            assert amount == amount.quantize(CENT)
    idle = allocation.deployment("vllm-idle")
    assert idle is not None and idle.unallocated > 0 and idle.allocated > 0
    (idle_item,) = allocation.items_for(deployment_id="vllm-idle")
    assert idle_item.gpu_seconds == Decimal("1234.5")
    dedicated = allocation.deployment("vllm-dedicated")
    assert dedicated is not None and dedicated.dedicated and dedicated.allocated == dedicated.cost

    total_cost = sum((d.cost for d in allocation.deployments), Decimal(0))
    total_allocated = sum((d.allocated for d in allocation.deployments), Decimal(0))
    assert sum((t.cost.amount for t in allocation.tenants), Decimal(0)) == total_allocated
    assert {t.tenant_id for t in allocation.tenants} == set(ids.values())
    for t in allocation.tenants:
        # share: the tenant's cost over the cost of every deployment in the view (4 places)
        assert t.share == (t.cost.amount / total_cost).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)


def test_tenant_view_rows_reconcile(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    c, full, _p, ids = money_world
    scoped = c.with_options(tenant="acme").finops.gpu_allocation(start=full.from_, end=full.to)
    assert {i.tenant_id for i in scoped.items} == {ids["acme"]}
    for row in scoped.deployments:
        assert row.allocated + row.unallocated == row.cost
        items = scoped.items_for(deployment_id=row.deployment_id)
        assert sum((i.allocated.amount for i in items), Decimal(0)) == row.allocated
    (tenant_row,) = scoped.tenants
    assert tenant_row.cost.amount == sum((i.allocated.amount for i in scoped.items), Decimal(0))
    assert tenant_row.share == 1


def test_tenant_view_daily_lists_dedicated_deployments_only_and_they_sum_to_cost(
    money_world: Tuple[EnterpriseAI, Allocation, AllocationPolicy, Dict[str, str]],
) -> None:
    # The contract: a scoped `daily` lists the tenant's dedicated deployments only (a shared deployment's
    # daily total would reveal other tenants' usage); those rows' days sum to their cost.
    c, full, _p, _ids = money_world
    scoped = c.with_options(tenant="acme").finops.gpu_allocation(start=full.from_, end=full.to)
    listed = {d.deployment_id for d in scoped.daily}
    dedicated = {row.deployment_id for row in scoped.deployments if row.dedicated}
    assert listed <= dedicated, listed - dedicated
    for row in scoped.deployments:
        if row.deployment_id in listed:
            daily = [d.cost.amount for d in scoped.daily if d.deployment_id == row.deployment_id]
            assert sum(daily, Decimal(0)) == row.cost, (row.deployment_id, daily, row.cost)
