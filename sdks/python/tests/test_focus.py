"""The FOCUS 1.2 export (``finops.gpu_allocation_focus``) against the real server: the file's columns, its
BilledCost summing exactly to the allocation of the same period, Parquet, and the typed validation error.

A server of its own, so that the rows hold only this module's data.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from enterprise_ai import Allocation, AsyncEnterpriseAI, EnterpriseAI, ValidationError

from _server import EaiServer
from conftest import ServerFactory
from helpers import hour_of_samples, policy, recent_hour, usage_event

NIL_UUID = "00000000-0000-0000-0000-000000000000"
World = Tuple[EnterpriseAI, EaiServer, dt.datetime, Allocation, Dict[str, str]]


@pytest.fixture(scope="module")
def focus_world(make_server: ServerFactory) -> Iterator[World]:
    srv = make_server(name="focus")
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = c.tenants.create(slug="acme", name="Acme")
        globex = c.tenants.create(slug="globex", name="Globex")
        hour = recent_hour(3)
        c.finops.gpu_samples(
            hour_of_samples("GPU-f1", "focus-shared", hour) + hour_of_samples("GPU-f2", "focus-shared", hour)
        )
        c.finops.gpu_samples(hour_of_samples("GPU-f3", "focus-idle", hour))
        c.finops.create_allocation_policy(policy("focus-*"))
        at = hour + dt.timedelta(minutes=12)
        c.usage.events(
            [
                usage_event("focus-shared", at, {"tokens_in": 6000, "tokens_out": 1000}, tenant_id=acme.id),
                usage_event("focus-shared", at, {"tokens_in": 3000}, tenant_id=globex.id),
                usage_event("focus-idle", at, {"gpu_seconds": "1234.5"}, tenant_id=globex.id),
            ]
        )
        allocation = c.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
        yield c, srv, hour, allocation, {"acme": acme.id, "globex": globex.id}


def rows_of(data: bytes) -> Tuple[List[str], List[Dict[str, str]]]:
    reader = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""))
    rows = list(reader)
    assert reader.fieldnames is not None
    return list(reader.fieldnames), rows


def billed(rows: List[Dict[str, str]]) -> Decimal:
    return sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0))


def test_csv_columns_and_sums_match_the_allocation(focus_world: World) -> None:
    c, _srv, hour, allocation, ids = focus_world
    data = c.finops.gpu_allocation_focus(start=hour, end=hour + dt.timedelta(hours=1))
    assert isinstance(data, bytes)
    header_line = data.split(b"\r\n", 1)[0].decode()
    for column in ("BilledCost", "ChargePeriodStart", "SubAccountId", "x_AllocationPolicyId"):
        assert column in header_line.split(","), header_line
    header, rows = rows_of(data)
    assert header == header_line.split(",")
    allocated = [r for r in rows if r["x_Unallocated"] == "false"]
    unallocated = [r for r in rows if r["x_Unallocated"] == "true"]
    assert len(allocated) + len(unallocated) == len(rows) and allocated and unallocated
    # Exact decimals: the allocated rows sum to the allocation's allocated total, every row to its cost.
    total_allocated = sum((d.allocated for d in allocation.deployments), Decimal(0))
    total_cost = sum((d.cost for d in allocation.deployments), Decimal(0))
    assert total_allocated > 0 and total_cost > total_allocated  # focus-idle keeps some cost unallocated
    assert billed(allocated) == total_allocated
    assert billed(rows) == total_cost
    assert {r["SubAccountId"] for r in unallocated} == {NIL_UUID}
    # Each (tenant, deployment, policy) sums to its item's allocated, in the item's currency.
    for item in allocation.items:
        mine = [
            r
            for r in allocated
            if (r["SubAccountId"], r["ResourceId"], r["x_AllocationPolicyId"])
            == (item.tenant_id, item.deployment_id, item.policy_id)
        ]
        assert mine, item
        assert billed(mine) == item.allocated.amount, item
        assert {r["BillingCurrency"] for r in mine} == {item.allocated.currency}
    for r in rows:
        assert r["BilledCost"] == r["EffectiveCost"] == r["ListCost"] == r["ContractedCost"]
        assert r["ChargePeriodStart"].startswith(hour.date().isoformat())
    assert {r["SubAccountName"] for r in allocated} == {"Acme", "Globex"}
    assert {r["SubAccountId"] for r in allocated} == set(ids.values())


def test_tenant_view_holds_its_rows_only(focus_world: World) -> None:
    c, _srv, hour, _allocation, ids = focus_world
    acme = c.with_options(tenant="acme")
    scoped = acme.finops.gpu_allocation(start=hour, end=hour + dt.timedelta(hours=1))
    _header, rows = rows_of(acme.finops.gpu_allocation_focus(start=hour, end=hour + dt.timedelta(hours=1)))
    assert rows and {r["SubAccountId"] for r in rows} == {ids["acme"]}
    assert {r["x_Unallocated"] for r in rows} == {"false"}
    assert billed(rows) == sum((i.allocated.amount for i in scoped.items), Decimal(0))


def test_parquet_is_a_parquet_file(focus_world: World) -> None:
    c, _srv, hour, _allocation, _ids = focus_world
    data = c.finops.gpu_allocation_focus(start=hour, end=hour + dt.timedelta(hours=1), format="parquet")
    assert data[:4] == b"PAR1" and data[-4:] == b"PAR1", data[:16]
    assert len(data) > 8


def test_bad_format_is_a_validation_error_naming_format(focus_world: World) -> None:
    c, _srv, hour, _allocation, _ids = focus_world
    with pytest.raises(ValidationError) as caught:
        c.finops.gpu_allocation_focus(start=hour, end=hour + dt.timedelta(hours=1), format="xml")
    assert caught.value.status == 422
    assert [d.field for d in caught.value.details] == ["format"]


async def test_async_client_and_to_file(focus_world: World, tmp_path: Path) -> None:
    c, srv, hour, _allocation, _ids = focus_world
    end = hour + dt.timedelta(hours=1)
    sync_csv = c.finops.gpu_allocation_focus(start=hour, end=end)
    async with AsyncEnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as ac:
        assert await ac.finops.gpu_allocation_focus(start=hour, end=end) == sync_csv
        written = await ac.finops.gpu_allocation_focus_to_file(
            tmp_path / "a.parquet", start=hour, end=end, format="parquet"
        )
        assert written.read_bytes()[:4] == b"PAR1"
        with pytest.raises(ValidationError) as caught:
            await ac.finops.gpu_allocation_focus(start=hour, end=end, format="xml")
        assert [d.field for d in caught.value.details] == ["format"]
    path = c.finops.gpu_allocation_focus_to_file(str(tmp_path / "october.csv"), start=hour, end=end)
    assert path == tmp_path / "october.csv" and path.read_bytes() == sync_csv
    with pytest.raises(ValidationError):
        c.finops.gpu_allocation_focus_to_file(tmp_path / "bad.csv", start=hour, end=end, format="xml")
    assert not (tmp_path / "bad.csv").exists()
