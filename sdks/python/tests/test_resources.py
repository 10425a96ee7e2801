"""Every call of the SDK, with the sync and the async client, against the real server."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import AsyncIterator, Dict, Union

import pytest

from enterprise_ai import (
    Allocation,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreated,
    AllocationPolicyList,
    ApiKey,
    ApiKeyCreated,
    ApiKeyList,
    AsyncEnterpriseAI,
    AuditEventList,
    AuditHead,
    AuthenticationError,
    Catalog,
    EnterpriseAI,
    GpuSample,
    Money,
    SampleIngestResult,
    Tenant,
    TenantList,
    UsageIngestResult,
    ValidationError,
    WhoAmI,
)

from _server import EaiServer
from helpers import deployment_row, hour_of_samples, maybe, policy, recent_hour, sample, unique, usage_event

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]


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
    """A client of the same kind with another key."""
    if isinstance(c, AsyncEnterpriseAI):
        return AsyncEnterpriseAI(base_url=server.url, api_key=api_key)
    return EnterpriseAI(base_url=server.url, api_key=api_key)


async def test_whoami_and_tenants(client: AnyClient, tenants: Dict[str, Tenant]) -> None:
    me = await maybe(client.auth.whoami())
    assert isinstance(me, WhoAmI)
    assert me.role == "platform_admin" and me.tenant_id is None and me.tenant is None
    assert me.acting_tenant is None
    assert re.fullmatch(r"key_\d+", me.key_id)

    signed_in = await maybe(client.with_options(tenant="acme").auth.whoami())
    assert signed_in.acting_tenant is not None
    assert signed_in.acting_tenant.slug == "acme" and signed_in.acting_tenant.id == tenants["acme"].id

    slug = unique("t")
    created = await maybe(client.tenants.create(slug=slug, name="Test Tenant"))
    assert isinstance(created, Tenant) and created.slug == slug and created.name == "Test Tenant"
    assert re.fullmatch(r"[0-9a-f-]{36}", created.id)
    by_slug = await maybe(client.tenants.get(slug))
    by_id = await maybe(client.tenants.get(created.id))
    assert by_slug == by_id == created
    listing = await maybe(client.tenants.list())
    assert isinstance(listing, TenantList)
    assert listing.get(slug) == created and listing.get("acme") == tenants["acme"]
    assert [t.slug for t in listing] == sorted(t.slug for t in listing)  # "by slug"


async def test_api_key_lifecycle(client: AnyClient, server: EaiServer, tenants: Dict[str, Tenant]) -> None:
    acme = tenants["acme"]
    created = await maybe(client.auth.create_api_key(role="viewer", tenant_id=acme.id, name="sdk viewer"))
    assert isinstance(created, ApiKeyCreated) and isinstance(created, ApiKey)
    assert created.key.startswith("eai_live_") and created.role == "viewer" and created.tenant_id == acme.id
    assert created.status == "active" and created.name == "sdk viewer"
    assert created.key not in repr(created) and created.key not in str(created)
    assert created.created_at.tzinfo is not None

    keys = await maybe(client.auth.list_api_keys())
    assert isinstance(keys, ApiKeyList)
    listed = keys.get(created.id)
    assert listed is not None and listed.status == "active" and "key" not in listed.raw

    viewer = other(client, server, created.key)
    me = await maybe(viewer.auth.whoami())
    assert me.key_id == created.id and me.role == "viewer" and me.tenant_id == acme.id
    assert me.tenant is not None and me.tenant.slug == "acme"

    rotated = await maybe(client.auth.rotate_api_key(created.id))
    assert rotated.id == created.id and rotated.key != created.key and rotated.rotated_at is not None
    with pytest.raises(AuthenticationError):
        await maybe(viewer.auth.whoami())  # grace 0: the old secret stops at once
    rotated_client = other(client, server, rotated.key)
    assert (await maybe(rotated_client.auth.whoami())).key_id == created.id

    graced = await maybe(client.auth.rotate_api_key(created.id, grace_seconds=60))
    assert graced.previous_secret_valid_until is not None
    assert (await maybe(rotated_client.auth.whoami())).key_id == created.id  # still within its grace

    revoked = await maybe(client.auth.revoke_api_key(created.id))
    assert isinstance(revoked, ApiKey) and revoked.status == "revoked" and revoked.revoked_at is not None
    with pytest.raises(AuthenticationError):
        await maybe(other(client, server, graced.key).auth.whoami())

    sampler = await maybe(client.auth.create_api_key(role="sampler", nodes=["gpu-node-3"]))
    assert sampler.nodes == ["gpu-node-3"] and sampler.tenant_id is None
    expiring = await maybe(
        client.auth.create_api_key(
            role="usage_reporter", expires_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)
        )
    )
    assert expiring.expires_at is not None and expiring.expires_at > dt.datetime.now(dt.timezone.utc)
    for c in (viewer, rotated_client):
        if isinstance(c, AsyncEnterpriseAI):
            await c.close()
        else:
            c.close()


async def test_allocation_policies(client: AnyClient) -> None:
    pattern = unique("pol") + "-*"
    created = await maybe(client.finops.create_allocation_policy(policy(pattern)))
    assert isinstance(created, AllocationPolicyCreated)
    assert re.fullmatch(r"alp_\d+", created.id) and created.status == "active"

    # Keyword arguments (and Decimal money) work too; keywords override the dict.
    kw = await maybe(
        client.finops.create_allocation_policy(
            {"name": "overridden", "gpu_hourly_cost": "9"},
            name="from kwargs",
            deployment_pattern=unique("kw") + "-*",
            currency="USD",
            gpu_hourly_cost=Decimal("1.2345"),
            effective_from=dt.date(2021, 1, 1),
            idle_capacity="proportional",
        )
    )
    listing = await maybe(client.finops.list_allocation_policies())
    assert isinstance(listing, AllocationPolicyList)
    p = listing.get(created.id)
    assert isinstance(p, AllocationPolicy)
    assert p.gpu_hourly_cost == Decimal("2.10") and isinstance(p.gpu_hourly_cost, Decimal)
    assert (
        p.overhead_pct == Decimal("18") and p.pue == Decimal("1.4") and p.energy_kwh_price == Decimal("0.21")
    )
    assert p.currency == "EUR" and p.deployment_pattern == pattern and p.enabled and p.effective_to is None
    assert p.effective_from == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    k = listing.get(kw.id)
    assert k is not None and k.name == "from kwargs" and k.gpu_hourly_cost == Decimal("1.2345")
    one = await maybe(client.finops.get_allocation_policy(created.id))
    assert isinstance(one, AllocationPolicy) and one == p
    assert k.currency == "USD" and k.idle_capacity == "proportional"

    change = await maybe(
        client.finops.supersede_allocation_policy(created.id, {"gpu_hourly_cost": Decimal("3.00")}, name="v2")
    )
    assert isinstance(change, AllocationPolicyChange)
    assert change.closed.id == created.id and change.closed.status == "closed"
    assert change.closed.effective_to == change.opened.effective_from
    assert change.opened.gpu_hourly_cost == Decimal("3.00") and change.opened.name == "v2"
    assert change.opened.deployment_pattern == pattern  # carried over

    at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    disabled = await maybe(client.finops.disable_allocation_policy(change.opened.id, effective_at=at))
    assert disabled.closed.id == change.opened.id
    assert disabled.opened.enabled is False and disabled.opened.gpu_hourly_cost == Decimal("3.00")
    assert disabled.closed.effective_to is not None
    assert abs((disabled.closed.effective_to - at).total_seconds()) < 0.002
    plain = await maybe(client.finops.disable_allocation_policy(kw.id))
    assert plain.opened.status == "disabled"


async def test_samples_allocation_and_catalog(client: AnyClient) -> None:
    deployment = unique("res")
    hour = recent_hour()
    samples = hour_of_samples(unique("GPU"), deployment, hour)
    original = [dict(s) for s in samples]
    result = await maybe(client.finops.gpu_samples(samples=samples))
    assert isinstance(result, SampleIngestResult)
    assert (result.accepted, result.duplicates, result.requests, result.new) == (240, 0, 1, 240)
    assert samples == original  # never modified
    again = await maybe(client.finops.gpu_samples(samples[:10]))
    assert (again.accepted, again.duplicates) == (10, 10)

    await maybe(client.finops.create_allocation_policy(policy(deployment)))
    # str, date and aware datetime bounds
    by_str = await maybe(
        client.finops.gpu_allocation(start=hour.date().isoformat(), end=hour.date().isoformat())
    )
    by_date = await maybe(client.finops.gpu_allocation(start=hour.date(), end=hour.date()))
    by_dt = await maybe(client.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1)))
    for allocation in (by_str, by_date, by_dt):
        assert isinstance(allocation, Allocation)
        row = deployment_row(allocation, deployment)
        assert row.samples == 240 and row.gpus == 1 and row.currency == "EUR"
        assert row.gpu_hours == Decimal(1) and isinstance(row.gpu_hours, Decimal)
        assert row.cost_money == Money(row.cost, "EUR")
    assert by_dt.from_ == hour and by_dt.to == hour + dt.timedelta(hours=1)
    assert by_str.from_ == dt.datetime.combine(hour.date(), dt.time(), dt.timezone.utc)
    assert by_str.to == by_str.from_ + dt.timedelta(days=1)
    default = await maybe(client.finops.gpu_allocation())
    assert default.deployment(deployment) is not None

    with pytest.raises(ValueError, match="naive"):
        await maybe(client.finops.gpu_allocation(start=dt.datetime(2026, 1, 1)))

    catalog = await maybe(client.providers.catalog())
    assert isinstance(catalog, Catalog)
    mine = [p for p in catalog if deployment in p.base_url]
    assert len(mine) == 1 and mine[0].discovery == "samples" and mine[0].local and mine[0].enabled
    assert mine[0].deployment_id == deployment and mine[0].models == []
    assert catalog.providers == catalog.items and len(catalog) >= 1


async def test_shared_gpu_equal_shares(client: AnyClient) -> None:
    """Two pods on one GPU without per-pod data: half each, ``share_method: "equal"``, reported by the
    allocation as ``equal_gpu_shares``; an unknown method is refused."""
    deployment = unique("eq")
    gpu = unique("GPU")
    hour = recent_hour()
    end = hour + dt.timedelta(seconds=15)

    def half(gpu_uuid: str, pod: str, share_method: str) -> GpuSample:
        return {
            "node": "gpu-node-3",
            "gpu_uuid": gpu_uuid,
            "model": "H100-80GB",
            "namespace": "eai-inference",
            "pod": pod,
            "deployment_id": deployment,
            "window_seconds": 15,
            "utilization": Decimal("0.5"),
            "memory_used_gb": 20,
            "power_w": 400,
            "timestamp": end,
            "gpu_fraction": Decimal("0.5"),
            "share_method": share_method,
        }

    shared = half(f"{gpu}/shared/eai-inference/{deployment}-b", f"{deployment}-b", "equal")
    own = half(gpu, f"{deployment}-a", "equal")
    result = await maybe(client.finops.gpu_samples([shared, own]))
    assert (result.accepted, result.duplicates) == (2, 0)

    allocation = await maybe(client.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1)))
    equal = [f for f in allocation.findings if f.code == "equal_gpu_shares" and deployment in f.message]
    assert len(equal) == 1, allocation.findings

    with pytest.raises(ValidationError) as info:
        await maybe(client.finops.gpu_samples([half(unique("GPU"), f"{deployment}-c", "half")]))
    assert info.value.fields == ["share_method"] and info.value.indexes == [0]


async def test_usage_events(client: AnyClient, tenants: Dict[str, Tenant]) -> None:
    acme = tenants["acme"]
    deployment = unique("use")
    at = recent_hour() + dt.timedelta(minutes=5)
    events = [usage_event(deployment, at, {"tokens_in": 10 + i}, tenant_id=acme.id) for i in range(3)]
    original = [dict(e) for e in events]
    result = await maybe(client.usage.events(events=events))
    assert isinstance(result, UsageIngestResult)
    assert result.accepted == 3 and result.requests == 1 and len(set(result.event_ids)) == 3
    assert events == original and all("event_id" not in e for e in events)  # never modified
    # Re-sending with the ids the SDK chose replaces the events.
    with_ids = [dict(e, event_id=i) for e, i in zip(events, result.event_ids)]
    again = await maybe(client.usage.events(with_ids))
    assert again.event_ids == result.event_ids and again.accepted == 3
    # A platform key signed in to a tenant may leave tenant_id out.
    signed_in = client.with_options(tenant="acme")
    no_tenant = await maybe(signed_in.usage.events([usage_event(deployment, at, {"tokens_out": 5})]))
    assert no_tenant.accepted == 1
    # Nothing to send: no request at all.
    empty = await maybe(client.usage.events([]))
    assert (empty.accepted, empty.requests, empty.event_ids) == (0, 0, [])


async def test_audit(client: AnyClient) -> None:
    first = await maybe(client.audit.events(after=0, limit=3))
    assert isinstance(first, AuditEventList) and 1 <= len(first) <= 3
    assert [e.seq for e in first] == sorted(e.seq for e in first)
    assert first[0].seq == 1 and first[0].prev_hash == "0" * 64 and first[0].action == "api_key.bootstrap"
    assert first.last_seq == first[-1].seq
    second = await maybe(client.audit.events(after=first.last_seq, limit=3))
    assert all(e.seq > first[-1].seq for e in second)
    if second:
        assert second[0].prev_hash == first[-1].hash
    default = await maybe(client.audit.events())
    assert 1 <= len(default) <= 100
    head = await maybe(client.audit.head())
    assert isinstance(head, AuditHead) and re.fullmatch(r"[0-9a-f]{64}", head.hash)
    assert head.seq >= (second.last_seq or first[-1].seq)


async def test_with_options_and_close(server: EaiServer) -> None:
    c = EnterpriseAI(base_url=server.url + "/", api_key=server.admin_key, tenant="acme", locale="fr")
    assert c.base_url == server.url and c.tenant == "acme" and c.locale == "fr"
    derived = c.with_options(tenant=None, max_retries=0, timeout=5)
    assert derived.tenant is None and derived.max_retries == 0 and derived.timeout == 5
    assert (derived.auth.whoami()).acting_tenant is None
    derived.close()  # does not close the shared connections
    assert not c.is_closed
    c.close()
    c.close()  # idempotent
    assert c.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        c.auth.whoami()
    with pytest.raises(TypeError):
        c.with_options(colour="blue")

    ac = AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key)
    assert (await ac.with_options(tenant="acme").auth.whoami()).acting_tenant is not None
    await ac.close()
    with pytest.raises(RuntimeError, match="closed"):
        await ac.auth.whoami()


def test_sample_helper_shape() -> None:
    s = sample("GPU-x", "d", None)
    assert "timestamp" not in s and s["window_seconds"] == 15
