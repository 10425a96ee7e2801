"""Statements against the real server, with the sync and the async client: issued for a month that is over
(``finops.issue_gpu_statements``), listed (``finops.gpu_statements``), read as JSON (``finops.gpu_statement``)
and as CSV (``finops.gpu_statement_csv``), a tenant's key seeing its own only; and the FOCUS export's
``version`` (``1.2`` beside the default ``1.3``).

A server of its own: the month's statements hold only this module's data. The data lies in the last hour of
the previous month (over, and well within the raw retention):

* ``st-shared``: SPEC §3's worked example, 2 GPUs for an hour, half busy, 400 W, under the worked example's
  policy (2.10 EUR per GPU-hour, 18 % overhead, 0.21 EUR per kWh, PUE 1.4); acme's 7,000 tokens and globex's
  3,000 split it 70/30. Cost = 2 GPU-h x 2.10 x 1.18 + 0.8 kWh x 1.4 x 0.21 = 4.956 + 0.2352 = 5.1912
  -> 5.19 EUR; acme 5.19 x 0.7 = 3.633 -> 3.63, globex 5.19 - 3.63 = 1.56.
* ``st-idle``: one GPU for an hour that nobody used: 1 x 2.10 x 1.18 + 0.4 x 1.4 x 0.21 = 2.478 + 0.1176
  = 2.5956 -> 2.60 EUR, all unallocated: the platform's statement (the nil uuid).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import uuid
from decimal import Decimal
from typing import AsyncIterator, Dict, Iterator, List, Union

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    EnterpriseAI,
    Money,
    NotFoundError,
    PermissionDeniedError,
    Statement,
    StatementIssued,
    StatementLine,
    StatementList,
    StatementSummary,
    ValidationError,
)

from _server import EaiServer
from conftest import ServerFactory
from helpers import hour_of_samples, maybe, policy, usage_event

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]
UTC = dt.timezone.utc
NIL_UUID = "00000000-0000-0000-0000-000000000000"
CSV_HEADER = "kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency"


class World:
    def __init__(
        self,
        srv: EaiServer,
        hour: dt.datetime,
        period: str,
        ids: Dict[str, str],
        first: StatementIssued,
        keys: Dict[str, str],
    ) -> None:
        self.srv, self.hour, self.period, self.ids, self.first, self.keys = (
            srv,
            hour,
            period,
            ids,
            first,
            keys,
        )

    def number_of(self, tenant_id: str) -> str:
        (s,) = [s for s in self.first.issued if s.tenant_id == tenant_id]
        return s.number


@pytest.fixture(scope="module")
def world(make_server: ServerFactory) -> Iterator[World]:
    srv = make_server(name="statements")
    this_month = dt.datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    hour = this_month - dt.timedelta(hours=1)  # the last hour of the previous month
    period = f"{hour.year:04d}-{hour.month:02d}"
    with EnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = c.tenants.create(slug="acme", name="Acme")
        globex = c.tenants.create(slug="globex", name="Globex")
        c.finops.gpu_samples(
            hour_of_samples("GPU-s1", "st-shared", hour) + hour_of_samples("GPU-s2", "st-shared", hour)
        )
        c.finops.gpu_samples(hour_of_samples("GPU-s3", "st-idle", hour))
        c.finops.create_allocation_policy(policy("st-*"))
        at = hour + dt.timedelta(minutes=12)
        c.usage.events(
            [
                usage_event("st-shared", at, {"tokens_in": 6000, "tokens_out": 1000}, tenant_id=acme.id),
                usage_event("st-shared", at, {"tokens_in": 3000}, tenant_id=globex.id),
            ]
        )
        # Issued once for the module, with a key of the test's own (the retry test below sends it again).
        key = f"statements-{uuid.uuid4()}"
        first = c.finops.issue_gpu_statements(period, idempotency_key=key)
        viewer = c.auth.create_api_key(role="viewer", tenant_id=acme.id, name="statements acme").key
        yield World(
            srv, hour, period, {"acme": acme.id, "globex": globex.id}, first, {"idem": key, "acme": viewer}
        )


@pytest.fixture(params=["sync", "async"])
async def client(request: pytest.FixtureRequest, world: World) -> AsyncIterator[AnyClient]:
    """A platform_admin client of the module's server, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=world.srv.url, api_key=world.srv.admin_key) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=world.srv.url, api_key=world.srv.admin_key) as ac:
            yield ac


@pytest.fixture(params=["sync", "async"])
async def acme_client(request: pytest.FixtureRequest, world: World) -> AsyncIterator[AnyClient]:
    """A viewer key of acme's, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=world.srv.url, api_key=world.keys["acme"]) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=world.srv.url, api_key=world.keys["acme"]) as ac:
            yield ac


def eur(amount: str) -> List[Money]:
    return [Money(Decimal(amount), "EUR")]


def test_issue_numbers_each_tenant_and_the_unallocated_capacity(world: World) -> None:
    first = world.first
    assert isinstance(first, StatementIssued) and first.already_issued == []
    assert all(isinstance(s, StatementSummary) for s in first.issued)
    by_tenant = {s.tenant_id: s for s in first.issued}
    assert set(by_tenant) == {world.ids["acme"], world.ids["globex"], NIL_UUID}, first.raw
    # The worked example's split (module docstring): 3.63 + 1.56 = 5.19, and st-idle's 2.60 unallocated.
    assert by_tenant[world.ids["acme"]].totals == eur("3.63")
    assert by_tenant[world.ids["globex"]].totals == eur("1.56")
    assert by_tenant[NIL_UUID].totals == eur("2.60")
    assert by_tenant[world.ids["acme"]].tenant_name == "Acme"
    numbers = sorted(s.number for s in first.issued)
    assert numbers == [f"ST-{world.period}-{n:04d}" for n in (1, 2, 3)]
    for s in first.issued:
        assert s.period == world.period and s.issued_at.tzinfo is not None
        assert type(s.totals[0].amount) is Decimal


async def test_issued_once_a_retry_answers_the_first_answer(client: AnyClient, world: World) -> None:
    # The same Idempotency-Key: the first answer again (its issued list), nothing issued twice.
    again = await maybe(client.finops.issue_gpu_statements(world.period, idempotency_key=world.keys["idem"]))
    assert sorted(s.number for s in again.issued) == sorted(s.number for s in world.first.issued)
    # A new call (a fresh key): nothing new, the three already issued; a date names its month too.
    month_day = dt.date(world.hour.year, world.hour.month, 15)
    later = await maybe(client.finops.issue_gpu_statements(month_day))
    assert isinstance(later, StatementIssued) and later.issued == []
    assert sorted(s.number for s in later.already_issued) == sorted(s.number for s in world.first.issued)
    one = await maybe(client.finops.issue_gpu_statements(world.period, tenant_id=world.ids["globex"]))
    assert one.issued == [] and [s.number for s in one.already_issued] == [
        world.number_of(world.ids["globex"])
    ]


async def test_a_month_not_over_is_a_validation_error(client: AnyClient) -> None:
    now = dt.datetime.now(UTC)
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.issue_gpu_statements(f"{now.year:04d}-{now.month:02d}"))
    assert err.value.fields == ["period"]


async def test_list_newest_first_and_filtered(client: AnyClient, world: World) -> None:
    listed = await maybe(client.finops.gpu_statements())
    assert isinstance(listed, StatementList)
    # One period: by number.
    assert [s.number for s in listed.statements] == sorted(s.number for s in world.first.issued)
    assert {s.number: s.totals for s in listed.statements} == {s.number: s.totals for s in world.first.issued}
    of_month = await maybe(client.finops.gpu_statements(period=world.period))
    assert [s.number for s in of_month.statements] == [s.number for s in listed.statements]
    acme = await maybe(client.finops.gpu_statements(tenant_id=world.ids["acme"]))
    assert [s.number for s in acme.statements] == [world.number_of(world.ids["acme"])]
    assert (await maybe(client.finops.gpu_statements(period="2020-01"))).statements == []
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_statements(period="2026-13"))
    assert err.value.fields == ["period"]


async def test_one_statement_as_json_with_its_lines(client: AnyClient, world: World) -> None:
    number = world.number_of(world.ids["acme"])
    st = await maybe(client.finops.gpu_statement(number))
    assert isinstance(st, Statement)
    assert (st.number, st.tenant_id, st.tenant_name, st.period) == (
        number,
        world.ids["acme"],
        "Acme",
        world.period,
    )
    month_start = world.hour.replace(day=1, hour=0)
    assert (st.from_, st.to) == (month_start, world.hour + dt.timedelta(hours=1))
    assert st.issued_by and st.as_of >= st.issued_at
    (line,) = st.lines
    assert isinstance(line, StatementLine)
    assert (line.kind, line.deployment_id) == ("charge", "st-shared")
    # acme's 70 % of st-shared's 2 GPU-hours and 0.8 kWh: 1.4 GPU-hours, 0.56 kWh, 3.63 EUR.
    assert line.gpu_hours == Decimal("1.4") and line.energy_kwh == Decimal("0.56")
    assert line.amount == Money(Decimal("3.63"), "EUR") and str(line.amount.amount) == "3.63"
    assert st.totals == eur("3.63")
    # Nothing arrived since it was issued: no adjustment, the adjusted totals are the totals.
    assert st.adjustments == [] and st.adjusted_totals == st.totals

    # The totals match the month's allocation (GET /v1/finops/gpu/allocation) to the cent.
    allocation = await maybe(client.finops.gpu_allocation(start=st.from_, end=st.to))
    (acme_row,) = [t for t in allocation.tenants if t.tenant_id == world.ids["acme"]]
    assert st.totals == [acme_row.cost]

    idle = await maybe(client.finops.gpu_statement(world.number_of(NIL_UUID)))
    assert idle.tenant_id == NIL_UUID and idle.totals == eur("2.60")
    assert [(x.deployment_id, x.amount) for x in idle.lines if x.amount.amount] == [
        ("st-idle", Money(Decimal("2.60"), "EUR"))
    ]

    with pytest.raises(NotFoundError):
        await maybe(client.finops.gpu_statement(f"ST-{world.period}-9999"))


async def test_one_statement_as_csv(client: AnyClient, world: World) -> None:
    text = await maybe(client.finops.gpu_statement_csv(world.number_of(world.ids["acme"])))
    assert isinstance(text, str)
    assert text.splitlines()[0] == CSV_HEADER
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    charges = [r for r in rows if r["kind"] == "charge"]
    totals = [r for r in rows if r["kind"] == "total"]
    assert [(r["deployment_id"], Decimal(r["amount"]), r["currency"]) for r in charges] == [
        ("st-shared", Decimal("3.63"), "EUR")
    ]
    assert [(Decimal(r["amount"]), r["currency"]) for r in totals] == [(Decimal("3.63"), "EUR")]
    assert [r for r in rows if r["kind"] == "adjustment"] == []
    assert [(Decimal(r["amount"]), r["currency"]) for r in rows if r["kind"] == "adjusted_total"] == [
        (Decimal("3.63"), "EUR")
    ]


async def test_a_tenant_key_sees_its_own_only(acme_client: AnyClient, world: World) -> None:
    mine = world.number_of(world.ids["acme"])
    listed = await maybe(acme_client.finops.gpu_statements())
    assert [s.number for s in listed.statements] == [mine]
    st = await maybe(acme_client.finops.gpu_statement(mine))
    assert st.tenant_id == world.ids["acme"] and st.totals == eur("3.63")
    # Another tenant's statement, and the platform's, do not exist for acme.
    for other in (world.number_of(world.ids["globex"]), world.number_of(NIL_UUID)):
        with pytest.raises(NotFoundError):
            await maybe(acme_client.finops.gpu_statement(other))
        with pytest.raises(NotFoundError):
            await maybe(acme_client.finops.gpu_statement_csv(other))
    # Issuing is platform_admin's.
    with pytest.raises(PermissionDeniedError):
        await maybe(acme_client.finops.issue_gpu_statements(world.period))


def _header(data: bytes) -> List[str]:
    return data.split(b"\r\n", 1)[0].decode().split(",")


async def test_focus_version_1_2_and_the_default_1_3(client: AnyClient, world: World) -> None:
    start, end = world.hour, world.hour + dt.timedelta(hours=1)
    default = await maybe(client.finops.gpu_allocation_focus(start=start, end=end))
    v13 = await maybe(client.finops.gpu_allocation_focus(start=start, end=end, version="1.3"))
    v12 = await maybe(client.finops.gpu_allocation_focus(start=start, end=end, version="1.2"))
    assert _header(default) == _header(v13)
    assert "AllocatedMethodId" in _header(v13) and "AllocatedMethodId" not in _header(v12)
    assert "BilledCost" in _header(v12)
    # Either way the rows sum to the same cost: 5.19 + 2.60 = 7.79 EUR.
    for data in (v12, v13):
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
        assert sum((Decimal(r["BilledCost"]) for r in rows), Decimal(0)) == Decimal("7.79")
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_allocation_focus(start=start, end=end, version="1.1"))
    assert err.value.fields == ["version"]


async def test_focus_hourly_rows(client: AnyClient, world: World) -> None:
    start, end = world.hour - dt.timedelta(hours=1), world.hour + dt.timedelta(hours=1)
    data = await maybe(client.finops.gpu_allocation_focus(start=start, end=end, granularity="hour"))
    rows = list(csv.DictReader(io.StringIO(data.decode("utf-8"), newline="")))
    # Only the one hour had samples: each row's charge period is that hour.
    assert rows and {r["ChargePeriodStart"].replace(" ", "T")[:13] for r in rows} == {
        world.hour.strftime("%Y-%m-%dT%H")
    }
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_allocation_focus(start=start, end=end, granularity="week"))
    assert err.value.fields == ["granularity"]


async def test_data_arriving_after_issue_is_an_adjustment(make_server: ServerFactory) -> None:
    """A dedicated deployment of acme's, one GPU for the last hour of the previous month at a flat 10 USD
    per GPU-hour: issued at 10.00. A second GPU's hour arrives after: the allocation now is 2 GPU-hours,
    20.00; the statement keeps its line and totals (10.00) and shows one adjustment of +1 GPU-hour and
    +10.00 USD, adjusted totals 20.00."""
    srv = make_server(name="adjustments")
    this_month = dt.datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    hour = this_month - dt.timedelta(hours=1)
    period = f"{hour.year:04d}-{hour.month:02d}"
    async with AsyncEnterpriseAI(base_url=srv.url, api_key=srv.admin_key) as c:
        acme = await c.tenants.create(slug="acme", name="Acme")
        await c.finops.create_allocation_policy(
            name="flat",
            deployment_pattern="adj-*",
            currency="USD",
            gpu_hourly_cost=10,
            effective_from="2020-01-01",
        )
        await c.finops.gpu_samples(hour_of_samples("GPU-a1", "adj-dedicated", hour, tenant_id=acme.id))
        (issued,) = (await c.finops.issue_gpu_statements(period)).issued
        assert issued.tenant_id == acme.id and issued.totals == [Money(Decimal("10.00"), "USD")]

        await c.finops.gpu_samples(hour_of_samples("GPU-a2", "adj-dedicated", hour, tenant_id=acme.id))
        st = await c.finops.gpu_statement(issued.number)
        assert [(x.kind, x.gpu_hours, x.amount) for x in st.lines] == [
            ("charge", Decimal(1), Money(Decimal("10.00"), "USD"))
        ]
        assert st.totals == [Money(Decimal("10.00"), "USD")]
        (adj,) = st.adjustments
        assert (adj.kind, adj.deployment_id, adj.policy_id) == (
            "adjustment",
            "adj-dedicated",
            st.lines[0].policy_id,
        )
        assert adj.gpu_hours == Decimal(1) and adj.amount == Money(Decimal("10.00"), "USD")
        assert st.adjusted_totals == [Money(Decimal("20.00"), "USD")]
        text = await c.finops.gpu_statement_csv(issued.number)
        kinds = [r["kind"] for r in csv.DictReader(io.StringIO(text, newline=""))]
        assert kinds == ["charge", "total", "adjustment", "adjusted_total"], text
        # Issued once: asking again changes nothing.
        again = await c.finops.issue_gpu_statements(period)
        assert again.issued == [] and again.already_issued[0].totals == [Money(Decimal("10.00"), "USD")]
