"""Tenant scoping with X-EAI-Tenant: a platform key signed in to a tenant reads exactly that tenant's view."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Dict

import pytest

from enterprise_ai import AsyncEnterpriseAI, EnterpriseAI, Tenant

from _server import EaiServer
from conftest import KeyFactory
from helpers import deployment_row, hour_of_samples, policy, recent_hour, unique, usage_event


@pytest.fixture(scope="module")
def shared_setup(admin: EnterpriseAI, new_key: KeyFactory, tenants: Dict[str, Tenant]) -> Dict[str, object]:
    """A shared deployment used by acme and globex, plus a deployment dedicated to globex, priced."""
    acme, globex = tenants["acme"], tenants["globex"]
    prefix = unique("scope")
    shared, dedicated = f"{prefix}-shared", f"{prefix}-globex"
    hour = recent_hour(7)
    admin.finops.gpu_samples(hour_of_samples(unique("GPU"), shared, hour))
    admin.finops.gpu_samples(hour_of_samples(unique("GPU"), dedicated, hour, tenant_id=globex.id))
    admin.finops.create_allocation_policy(policy(f"{prefix}-*"))
    at = hour + dt.timedelta(minutes=20)
    # acme reports through its developer key (tenant from the key) ...
    with EnterpriseAI(base_url=admin.base_url, api_key=new_key("developer", acme.id)) as dev:
        dev.usage.events([usage_event(shared, at, {"gpu_seconds": 600})])
    # ... globex through a platform key signed in to it (tenant_id may be left out) and one with tenant_id.
    admin.with_options(tenant="globex").usage.events([usage_event(shared, at, {"gpu_seconds": 200})])
    admin.usage.events([usage_event(shared, at, {"gpu_seconds": 100}, tenant_id=globex.id)])
    return {"shared": shared, "dedicated": dedicated, "hour": hour}


def test_platform_view_has_both_tenants(
    admin: EnterpriseAI, tenants: Dict[str, Tenant], shared_setup: Dict[str, object]
) -> None:
    shared, hour = str(shared_setup["shared"]), shared_setup["hour"]
    assert isinstance(hour, dt.datetime)
    allocation = admin.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    items = allocation.items_for(deployment_id=shared)
    assert {i.tenant_id for i in items} == {tenants["acme"].id, tenants["globex"].id}
    by_tenant = {i.tenant_id: i.gpu_seconds for i in items}
    assert by_tenant == {tenants["acme"].id: Decimal(600), tenants["globex"].id: Decimal(300)}
    assert {tenants["acme"].id, tenants["globex"].id} <= set(allocation.tenant_ids)
    assert allocation.deployment(str(shared_setup["dedicated"])) is not None


@pytest.mark.parametrize("tenant_key", ["acme", "id"])
def test_signed_in_view_is_only_that_tenant(
    admin: EnterpriseAI, tenants: Dict[str, Tenant], shared_setup: Dict[str, object], tenant_key: str
) -> None:
    acme = tenants["acme"]
    hour = shared_setup["hour"]
    assert isinstance(hour, dt.datetime)
    scoped = admin.with_options(tenant="acme" if tenant_key == "acme" else acme.id)
    allocation = scoped.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    assert allocation.items and {i.tenant_id for i in allocation.items} == {acme.id}
    assert [t.tenant_id for t in allocation.tenants] == [acme.id]
    assert allocation.tenant_ids == [acme.id]
    (item,) = allocation.items_for(deployment_id=str(shared_setup["shared"]))
    assert item.gpu_seconds == Decimal(600)
    # globex's dedicated deployment is not in acme's view, nor in its catalog.
    assert allocation.deployment(str(shared_setup["dedicated"])) is None
    assert all(str(shared_setup["dedicated"]) not in p.base_url for p in scoped.providers.catalog())
    assert any(str(shared_setup["shared"]) in p.base_url for p in scoped.providers.catalog())


def test_tenant_key_sees_its_own_view(
    server: EaiServer, new_key: KeyFactory, tenants: Dict[str, Tenant], shared_setup: Dict[str, object]
) -> None:
    globex = tenants["globex"]
    hour = shared_setup["hour"]
    assert isinstance(hour, dt.datetime)
    with EnterpriseAI(base_url=server.url, api_key=new_key("finops", globex.id)) as c:
        allocation = c.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
        assert {i.tenant_id for i in allocation.items} == {globex.id}
        shared_items = allocation.items_for(deployment_id=str(shared_setup["shared"]))
        assert [i.gpu_seconds for i in shared_items] == [Decimal(300)]
        dedicated = deployment_row(allocation, str(shared_setup["dedicated"]))
        assert dedicated.dedicated and dedicated.allocated == dedicated.cost
        assert [t.slug for t in c.tenants.list()] == ["globex"]


async def test_async_signed_in_view(
    server: EaiServer, tenants: Dict[str, Tenant], shared_setup: Dict[str, object]
) -> None:
    hour = shared_setup["hour"]
    assert isinstance(hour, dt.datetime)
    async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key, tenant="globex") as c:
        allocation = await c.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    assert {i.tenant_id for i in allocation.items} == {tenants["globex"].id}
