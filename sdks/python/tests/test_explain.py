"""Why a deployment costs what it does (``finops.gpu_allocation_explain``) against the real server: the SPEC's
worked example line by line, the rounded lines equal to the allocation, and the reader's scope (its own share,
the other tenants summed; nothing of a deployment it is not charged on; never another tenant's view).

A server of its own, so that the deployment holds only this module's data.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from typing import Dict, Iterator, Tuple

import pytest

from enterprise_ai import (
    AllocationExplanation,
    AsyncEnterpriseAI,
    EnterpriseAI,
    NotFoundError,
    PermissionDeniedError,
)

from _server import EaiServer
from conftest import ServerFactory
from helpers import hour_of_samples, policy, recent_hour, usage_event

World = Tuple[EnterpriseAI, EaiServer, dt.datetime, Dict[str, str]]


@pytest.fixture(scope="module")
def world(make_server: ServerFactory) -> Iterator[World]:
    srv = make_server(name="explain")
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = c.tenants.create(slug="acme", name="Acme")
        globex = c.tenants.create(slug="globex", name="Globex")
        initech = c.tenants.create(slug="initech", name="Initech")
        hour = recent_hour(3)
        # The worked example: 2 GPUs every 15 s for an hour at 400 W; 7,000 and 3,000 tokens.
        c.finops.gpu_samples(
            hour_of_samples("GPU-e1", "explain-llm", hour, power_w=400)
            + hour_of_samples("GPU-e2", "explain-llm", hour, power_w=400)
        )
        c.finops.create_allocation_policy(policy("explain-*"))
        at = hour + dt.timedelta(minutes=20)
        c.usage.events(
            [
                usage_event("explain-llm", at, {"tokens_in": 7000}, tenant_id=acme.id),
                usage_event("explain-llm", at, {"tokens_in": 3000}, tenant_id=globex.id),
            ]
        )
        yield c, srv, hour, {"acme": acme.id, "globex": globex.id, "initech": initech.id}


def test_the_worked_example_line_by_line(world: World) -> None:
    c, _, hour, t = world
    end = hour + dt.timedelta(hours=1)
    e = c.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)
    assert isinstance(e, AllocationExplanation)
    assert (e.deployment_id, e.bucket_seconds, e.from_, e.to) == ("explain-llm", 3600, hour, end)
    assert e.policies[0].gpu_hourly_cost == Decimal("2.1") and e.policies[0].pue == Decimal("1.4")
    (b,) = e.buckets
    assert b.gpu_seconds == Decimal(7200) and b.owner is None and not b.over_attribution
    shares = {cl.party.tenant_id: (cl.tokens, cl.share) for cl in b.claims}
    assert shares == {
        t["acme"]: (Decimal(7000), Decimal("0.7")),
        t["globex"]: (Decimal(3000), Decimal("0.3")),
    }
    (p,) = b.priced
    assert (p.gpu_time_cost, p.energy_cost, p.cost, p.idle) == (
        Decimal("4.956"),
        Decimal("0.2352"),
        Decimal("5.1912"),
        Decimal(0),
    )
    assert {x.party.tenant_id: x.cost for x in p.parties} == {
        t["acme"]: Decimal("3.63384"),
        t["globex"]: Decimal("1.55736"),
    }
    (r,) = e.rounding
    assert (r.currency, r.exact, r.cost) == ("EUR", Decimal("5.1912"), Decimal("5.19"))
    lines = {
        x.party.tenant_id: (x.floor, x.remainder_unit, x.amount) for x in r.lines if x.party.kind == "tenant"
    }
    assert lines == {
        t["acme"]: (Decimal("3.63"), Decimal("0.00"), Decimal("3.63")),
        t["globex"]: (Decimal("1.55"), Decimal("0.01"), Decimal("1.56")),
    }
    # The rounded lines are the allocation's items, to the cent.
    a = c.finops.gpu_allocation(start=hour, end=end)
    for item in a.items:
        assert e.amount(item.tenant_id) == item.allocated.amount


def test_the_pods_where_the_time_ran(world: World) -> None:
    c, srv, hour, t = world
    end = hour + dt.timedelta(hours=1)
    e = c.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)
    # The breakdown by namespace, pod, GPU and share method: one pod on two GPUs of its own.
    assert [r.group for r in e.pods] == [
        {"namespace": "eai-inference", "pod": "explain-llm-0", "gpu": gpu, "share": "exclusive"}
        for gpu in ("GPU-e1", "GPU-e2")
    ]
    assert [(r.samples, r.gpu_seconds, r.gpu_share) for r in e.pods] == [(240, Decimal(3600), Decimal(1))] * 2
    assert sum((r.amount("EUR") for r in e.pods), Decimal(0)) == Decimal("5.19")
    # As the breakdown answers it.
    u = c.finops.gpu_usage(
        start=hour,
        end=end,
        group_by=["namespace", "pod", "gpu", "share"],
        filter={"deployment": "explain-llm"},
    )
    assert e.pods == u.rows
    # A tenant's key sees the pods of its dedicated deployments only: none of a shared one.
    key = c.auth.create_api_key(role="viewer", tenant_id=t["acme"], name="explain acme pods").key
    with EnterpriseAI(base_url=srv.url, api_key=key) as acme:
        assert acme.finops.gpu_allocation_explain("explain-llm", start=hour, end=end).pods == []


def test_a_tenant_sees_its_share_and_the_others_summed(world: World) -> None:
    c, srv, hour, t = world
    end = hour + dt.timedelta(hours=1)

    def viewer(tenant: str) -> str:
        return c.auth.create_api_key(role="viewer", tenant_id=t[tenant], name=f"explain {tenant}").key

    with EnterpriseAI(base_url=srv.url, api_key=viewer("acme")) as acme:
        e = acme.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)
        kinds = [(cl.party.kind, cl.party.tenant_id) for cl in e.buckets[0].claims]
        assert kinds == [("tenant", t["acme"]), ("other_tenants", None)]
        assert t["globex"] not in str(e.raw)
        with pytest.raises(PermissionDeniedError):
            acme.finops.gpu_allocation_explain("explain-llm", start=hour, end=end, tenant_id=t["globex"])
    # The platform may look as a tenant does.
    as_globex = c.finops.gpu_allocation_explain("explain-llm", start=hour, end=end, tenant_id=t["globex"])
    assert as_globex.amount(t["globex"]) == Decimal("1.56")
    assert t["acme"] not in str(as_globex.raw)
    with EnterpriseAI(base_url=srv.url, api_key=viewer("initech")) as initech:
        with pytest.raises(NotFoundError):
            initech.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)


def test_the_async_client_explains_the_same(world: World) -> None:
    c, srv, hour, _ = world
    end = hour + dt.timedelta(hours=1)

    async def run() -> AllocationExplanation:
        async with AsyncEnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as a:
            return await a.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)

    assert asyncio.run(run()) == c.finops.gpu_allocation_explain("explain-llm", start=hour, end=end)
