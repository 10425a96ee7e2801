"""GPU time and cost per pod, node, GPU, ... (``finops.gpu_usage``) against the real server: a deployment's
rows sum to its allocation cost to the cent, a filter keeps the same cents, several dimensions, the reader's
scope (a tenant sees its dedicated deployments only), each row's share of its GPU and how it was obtained (a
GPU shared by two pods, measured), and the typed validation error.

A server of its own, so that the deployments hold only this module's data.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from typing import Any, Dict, Iterator, List, Tuple

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    EnterpriseAI,
    GpuUsageBreakdown,
    GpuUsageRow,
    Money,
    ValidationError,
)
from enterprise_ai._operations import _csv, _usage_filter

from _server import EaiServer
from conftest import ServerFactory
from helpers import deployment_row, hour_of_samples, policy, recent_hour

World = Tuple[EnterpriseAI, EaiServer, dt.datetime, dt.datetime, str]

SHARED = "usage-llm"
DEDICATED = "usage-acme"
POD_A = "usage-llm-7d9f8c6b5-x2k4q"
POD_B = "usage-llm-7d9f8c6b5-z8m1p"
# A GPU shared by two pods of one deployment, two hours before the others (so that they keep their rows):
# the first pod's time on the GPU itself, the second's on its share slice, each share measured.
SHARED_GPU = "usage-gpu-shared"
SHARED_POD_A = "usage-gpu-shared-a"
SHARED_POD_B = "usage-gpu-shared-b"


def _placed(samples: List[Dict[str, Any]], pod: str, node: str) -> List[Dict[str, Any]]:
    return [{**s, "pod": pod, "node": node} for s in samples]


def _measured(samples: List[Dict[str, Any]], pod: str, fraction: str) -> List[Dict[str, Any]]:
    return [
        {**s, "pod": pod, "node": "usage-node-3", "gpu_fraction": fraction, "share_method": "measured"}
        for s in samples
    ]


def _shared_hour(start: dt.datetime) -> dt.datetime:
    return start - dt.timedelta(hours=2)


@pytest.fixture(scope="module")
def world(make_server: ServerFactory) -> Iterator[World]:
    srv = make_server(name="usage")
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = c.tenants.create(slug="acme", name="Acme")
        hour = recent_hour(3)
        c.finops.create_allocation_policy(policy("usage-*"))
        # The shared deployment: two GPUs in two pods on one node, the second for the first half hour only;
        # the dedicated one: a GPU of Acme's on another node.
        c.finops.gpu_samples(
            _placed(hour_of_samples("GPU-u1", SHARED, hour), POD_A, "usage-node-1")
            + _placed(hour_of_samples("GPU-u2", SHARED, hour)[:120], POD_B, "usage-node-1")
            + _placed(
                hour_of_samples("GPU-u3", DEDICATED, hour, tenant_id=acme.id), "usage-acme-0", "usage-node-2"
            )
        )
        shared_hour = _shared_hour(hour)
        c.finops.gpu_samples(
            _measured(hour_of_samples("GPU-us", SHARED_GPU, shared_hour), SHARED_POD_A, "0.75")
            + _measured(
                hour_of_samples(f"GPU-us/shared/eai-inference/{SHARED_POD_B}", SHARED_GPU, shared_hour),
                SHARED_POD_B,
                "0.25",
            )
        )
        yield c, srv, hour, hour + dt.timedelta(hours=1), acme.id


def _cents(u: GpuUsageBreakdown) -> Dict[Tuple[Tuple[str, Any], ...], List[Money]]:
    return {tuple(sorted(r.group.items())): r.cost for r in u.rows}


def test_by_pod_sums_to_the_allocation_to_the_cent(world: World) -> None:
    c, _, start, end, _ = world
    u = c.finops.gpu_usage(start=start, end=end, group_by="pod", filter={"deployment": SHARED})
    assert isinstance(u, GpuUsageBreakdown)
    assert (u.from_, u.to, u.group_by) == (start, end, ["pod"])
    assert [r.group for r in u.rows] == [{"pod": POD_A}, {"pod": POD_B}]
    a, b = u.rows
    assert isinstance(a, GpuUsageRow)
    assert (a.samples, a.estimated_samples, b.samples) == (240, 0, 120)
    assert (a.gpu_seconds, b.gpu_seconds) == (Decimal(3600), Decimal(1800))
    assert a.busy_gpu_seconds == Decimal(1800) and a.unpriced_gpu_seconds == Decimal(0)
    assert a.energy_wh == Decimal(400) and b.energy_wh == Decimal(200)
    assert all(isinstance(x, Decimal) for r in u.rows for x in (r.gpu_seconds, r.gpu_memory_gb_seconds))
    assert [m.currency for r in u.rows for m in r.cost] == ["EUR", "EUR"]
    # 2.5956 and 1.2978 exactly: 3.89 rounded, the cent left over going to the larger remainder.
    assert (a.cost, b.cost) == ([Money(Decimal("2.59"), "EUR")], [Money(Decimal("1.30"), "EUR")])
    allocation = c.finops.gpu_allocation(start=start, end=end)
    expected = deployment_row(allocation, SHARED).cost
    assert a.amount("EUR") + b.amount("EUR") == u.total("EUR") == expected
    assert u.total("USD") == Decimal(0)
    # Every deployment's rows, unfiltered, sum to the allocation's cost of it.
    by_deployment = c.finops.gpu_usage(start=start, end=end, group_by=["deployment", "pod"])
    for dep in (SHARED, DEDICATED):
        rows = [r for r in by_deployment.rows if r.group["deployment"] == dep]
        assert sum((r.amount("EUR") for r in rows), Decimal(0)) == deployment_row(allocation, dep).cost


def test_a_filter_keeps_the_asked_rows_with_the_same_cents(world: World) -> None:
    c, _, start, end, _ = world
    everything = _cents(c.finops.gpu_usage(start=start, end=end, group_by=["pod"]))
    assert len(everything) == 3
    only_b = c.finops.gpu_usage(start=start, end=end, group_by=["pod"], filter={"pod": POD_B})
    assert _cents(only_b) == {(("pod", POD_B),): everything[(("pod", POD_B),)]}
    # Several values of one dimension: any of them.
    both = c.finops.gpu_usage(start=start, end=end, group_by=["pod"], filter={"pod": [POD_A, POD_B]})
    assert _cents(both) == {k: v for k, v in everything.items() if k[0][1] in (POD_A, POD_B)}
    # Several dimensions: all of them.
    none = c.finops.gpu_usage(
        start=start, end=end, group_by="pod", filter={"deployment": SHARED, "node": "usage-node-2"}
    )
    assert none.rows == [] and none.total("EUR") == Decimal(0)


def test_by_node_and_gpu(world: World) -> None:
    c, _, start, end, _ = world
    u = c.finops.gpu_usage(start=start, end=end, group_by=["node", "gpu"])
    assert u.group_by == ["node", "gpu"]
    assert [r.group for r in u.rows] == [
        {"node": "usage-node-1", "gpu": "GPU-u1"},
        {"node": "usage-node-1", "gpu": "GPU-u2"},
        {"node": "usage-node-2", "gpu": "GPU-u3"},
    ]
    assert [r.gpu_seconds for r in u.rows] == [Decimal(3600), Decimal(1800), Decimal(3600)]
    by_node = c.finops.gpu_usage(start=start, end=end, group_by="node")
    node1 = next(r for r in by_node.rows if r.group == {"node": "usage-node-1"})
    assert node1.amount("EUR") == u.rows[0].amount("EUR") + u.rows[1].amount("EUR")
    assert by_node.total("EUR") == u.total("EUR")


def test_each_row_grouped_by_gpu_has_its_share_of_the_gpu(world: World) -> None:
    c, srv, start, end, acme_id = world
    u = c.finops.gpu_usage(start=start, end=end, group_by=["pod", "gpu", "share"])
    assert u.group_by == ["pod", "gpu", "share"]
    assert [r.group for r in u.rows] == [
        {"pod": "usage-acme-0", "gpu": "GPU-u3", "share": "exclusive"},
        {"pod": POD_A, "gpu": "GPU-u1", "share": "exclusive"},
        {"pod": POD_B, "gpu": "GPU-u2", "share": "exclusive"},
    ]
    # Each pod had its GPU to itself (the second for half the hour: all of that GPU's time in the period).
    assert [r.gpu_share for r in u.rows] == [Decimal(1)] * 3
    assert all(isinstance(r.gpu_share, Decimal) for r in u.rows)
    # Not grouped by gpu: no share of a GPU; grouped by share alone: the method of each sample.
    by_share = c.finops.gpu_usage(start=start, end=end, group_by="share")
    assert [(r.group, r.gpu_share) for r in by_share.rows] == [({"share": "exclusive"}, None)]
    assert by_share.rows[0].gpu_seconds == Decimal(9000)
    # A tenant's key is not told how much of a GPU the others used.
    key = c.auth.create_api_key(role="viewer", tenant_id=acme_id, name="usage acme gpu share").key
    with EnterpriseAI(base_url=srv.url, api_key=key) as acme:
        mine = acme.finops.gpu_usage(start=start, end=end, group_by=["pod", "gpu"])
        assert [(r.group, r.gpu_share) for r in mine.rows] == [
            ({"pod": "usage-acme-0", "gpu": "GPU-u3"}, None)
        ]
        assert "gpu_share" not in mine.rows[0].raw


def test_a_gpu_shared_by_two_pods_is_one_gpu_with_each_pods_measured_share(world: World) -> None:
    c, _, start, _, _ = world
    hour = _shared_hour(start)
    end = hour + dt.timedelta(hours=1)
    u = c.finops.gpu_usage(
        start=hour, end=end, group_by=["pod", "gpu", "share"], filter={"deployment": SHARED_GPU}
    )
    assert [(r.group, r.gpu_seconds, r.gpu_share) for r in u.rows] == [
        ({"pod": SHARED_POD_A, "gpu": "GPU-us", "share": "measured"}, Decimal(2700), Decimal("0.75")),
        ({"pod": SHARED_POD_B, "gpu": "GPU-us", "share": "measured"}, Decimal(900), Decimal("0.25")),
    ]
    allocation = c.finops.gpu_allocation(start=hour, end=end)
    assert u.total("EUR") == deployment_row(allocation, SHARED_GPU).cost
    # One GPU: the device, whichever pod's share of it.
    by_gpu = c.finops.gpu_usage(start=hour, end=end, group_by="gpu", filter={"deployment": SHARED_GPU})
    assert [(r.group, r.gpu_seconds, r.gpu_share) for r in by_gpu.rows] == [
        ({"gpu": "GPU-us"}, Decimal(3600), Decimal(1))
    ]
    # The explanation says where the deployment's time ran: the same rows, by namespace too.
    e = c.finops.gpu_allocation_explain(SHARED_GPU, start=hour, end=end)
    assert [(r.group, r.gpu_share) for r in e.pods] == [
        (
            {"namespace": "eai-inference", "pod": SHARED_POD_A, "gpu": "GPU-us", "share": "measured"},
            Decimal("0.75"),
        ),
        (
            {"namespace": "eai-inference", "pod": SHARED_POD_B, "gpu": "GPU-us", "share": "measured"},
            Decimal("0.25"),
        ),
    ]
    assert [r.cost for r in e.pods] == [r.cost for r in u.rows]
    assert all(isinstance(r, GpuUsageRow) for r in e.pods)


def test_a_tenant_sees_its_dedicated_deployments_only(world: World) -> None:
    c, srv, start, end, acme_id = world
    by_tenant = c.finops.gpu_usage(start=start, end=end, group_by=["deployment", "tenant"])
    assert [r.group for r in by_tenant.rows] == [
        {"deployment": DEDICATED, "tenant": acme_id},
        {"deployment": SHARED, "tenant": None},
    ]
    key = c.auth.create_api_key(role="viewer", tenant_id=acme_id, name="usage acme").key
    with EnterpriseAI(base_url=srv.url, api_key=key) as acme:
        mine = acme.finops.gpu_usage(start=start, end=end, group_by=["deployment", "pod"])
        assert [r.group for r in mine.rows] == [{"deployment": DEDICATED, "pod": "usage-acme-0"}]
        assert mine.rows[0].cost == by_tenant.rows[0].cost
        assert SHARED not in str(mine.raw)
        assert acme.finops.gpu_usage(start=start, end=end, filter={"deployment": SHARED}).rows == []


def test_a_bad_dimension_is_a_validation_error(world: World) -> None:
    c, _, start, end, _ = world
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_usage(start=start, end=end, group_by=["pod", "flavour"])
    assert caught.value.status == 422
    assert [d.field for d in caught.value.details] == ["group_by"]
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_usage(start=start, end=end, filter={"flavour": "x"})
    assert [d.field for d in caught.value.details] == ["filter"]


def test_the_async_client_breaks_down_the_same(world: World) -> None:
    c, srv, start, end, _ = world

    async def run() -> GpuUsageBreakdown:
        async with AsyncEnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as a:
            with pytest.raises(ValidationError):
                await a.finops.gpu_usage(start=start, end=end, group_by="flavour")
            return await a.finops.gpu_usage(start=start, end=end, group_by=("namespace", "pod"))

    assert asyncio.run(run()) == c.finops.gpu_usage(start=start, end=end, group_by="namespace,pod")


def test_the_query_parameters() -> None:
    assert _csv(None, "group_by") is None
    assert _csv("namespace,pod", "group_by") == "namespace,pod"
    assert _csv(["node", "gpu"], "group_by") == "node,gpu"
    assert _usage_filter(None) is None and _usage_filter({}) is None
    assert _usage_filter({"deployment": "a", "node": ["n1", "n2"]}) == "deployment:a,node:n1,node:n2"
    assert _usage_filter({"pod": "ns:p"}) == "pod:ns:p"
    with pytest.raises(ValueError):
        _usage_filter({"pod": "a,b"})
    with pytest.raises(TypeError):
        _usage_filter({"pod": [1]})  # type: ignore[list-item]
    with pytest.raises(TypeError):
        _csv([1], "group_by")  # type: ignore[list-item]
