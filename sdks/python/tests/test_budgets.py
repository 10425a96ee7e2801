"""Budgets and reservations against the real server: creation and the month's standing, exact enforcement
(402 ``budget_exceeded``), idempotent commits, releases, the ``reservation`` context manager (sync and
async), supersede/disable and tenant isolation. Each test has a tenant of its own (budgets are per tenant)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import AsyncIterator, Iterator, List, Union

import pytest

from enterprise_ai import (
    AsyncEnterpriseAI,
    Budget,
    BudgetChange,
    BudgetExceededError,
    BudgetList,
    ConflictError,
    EnterpriseAI,
    EnterpriseAIError,
    Money,
    NotFoundError,
    Reservation,
    Tenant,
)

from _server import EaiServer
from conftest import KeyFactory
from helpers import maybe, unique

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]


def eur(amount: str) -> Money:
    return Money(Decimal(amount), "EUR")


@pytest.fixture()
def tenant(admin: EnterpriseAI) -> Tenant:
    """A tenant of the test's own."""
    return admin.tenants.create(slug=unique("bud"), name="Budget test", id=str(uuid.uuid4()))


@pytest.fixture()
def developer(server: EaiServer, new_key: KeyFactory, tenant: Tenant) -> Iterator[EnterpriseAI]:
    """A developer of the test's tenant (it may reserve for its tenant)."""
    with EnterpriseAI(base_url=server.url, api_key=new_key("developer", tenant.id)) as c:
        yield c


def budget_of(admin: EnterpriseAI, tenant: Tenant, limit: str = "5.00") -> Budget:
    return admin.finops.create_budget(
        tenant_id=tenant.id, name=f"{tenant.slug} monthly", limit=limit, currency="EUR", enforce=True
    )


@pytest.fixture(params=["sync", "async"])
async def client(request: pytest.FixtureRequest, server: EaiServer) -> AsyncIterator[AnyClient]:
    """A platform_admin client, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as ac:
            yield ac


async def test_create_and_read_budget(client: AnyClient, tenant: Tenant) -> None:
    created = await maybe(
        client.finops.create_budget(
            {"tenant_id": tenant.id, "name": "monthly", "limit": {"amount": "1000.00", "currency": "EUR"}},
            thresholds_pct=[50, 100],
            enforce=True,
            webhook_url="https://hooks.example.com/eai",
        )
    )
    assert isinstance(created, Budget)
    assert created.id.startswith("bud_") and created.tenant_id == tenant.id
    assert created.limit == eur("1000.00") and created.enforce and created.status == "active"
    assert created.thresholds_pct == [50, 100] and created.period == "month"
    assert created.webhook_secret is not None and created.webhook_secret.startswith("whsec_")

    got = await maybe(client.finops.get_budget(created.id))
    assert got.webhook_secret is None and got.id == created.id
    assert got.current is not None
    assert got.current.spent == eur("0.00") and got.current.held == eur("0.00")
    assert got.current.left == eur("1000.00")
    assert got.current.spent_tokens == 0 and got.current.tokens_left is None
    assert got.current.crossed_pct == []

    listed = await maybe(client.finops.list_budgets())
    assert isinstance(listed, BudgetList) and listed.get(created.id) is not None
    scoped = client.with_options(tenant=tenant.slug)
    mine = await maybe(scoped.finops.list_budgets())
    assert [b.id for b in mine] == [created.id]


def test_budget_grants_exactly_what_fits(
    admin: EnterpriseAI, developer: EnterpriseAI, tenant: Tenant
) -> None:
    budget = budget_of(admin, tenant, "5.00")
    granted: List[Reservation] = []
    refused: List[BudgetExceededError] = []
    for _ in range(8):
        try:
            granted.append(developer.finops.reserve("llm.invoke", cost="1.00", tokens=100))
        except BudgetExceededError as exc:
            refused.append(exc)
    assert len(granted) == 5 and len(refused) == 3
    assert all(r.status == "held" and r.estimate.cost == Decimal("1.00") for r in granted)
    assert all(r.estimate.currency == "EUR" and r.tenant_id == tenant.id for r in granted)
    err = refused[0]
    assert err.status == 402 and err.code == "budget_exceeded" and isinstance(err, EnterpriseAIError)
    assert [d.field for d in err.details] == ["estimate.cost"]
    assert budget.id in err.message and err.message_i18n["fr"]

    current = admin.finops.get_budget(budget.id).current
    assert current is not None
    assert current.held == eur("5.00") and current.left == eur("0.00") and current.held_tokens == 500


def test_commit_is_idempotent_and_release_frees(
    admin: EnterpriseAI, developer: EnterpriseAI, tenant: Tenant
) -> None:
    budget = budget_of(admin, tenant, "5.00")
    r = developer.finops.reserve("llm.invoke", cost="2.00", tokens=4000, deployment_id="vllm-llama-70b")
    assert r.deployment_id == "vllm-llama-70b" and r.actual is None
    done = developer.finops.commit_reservation(r.id, cost="1.50", tokens=3100)
    assert done.status == "committed" and done.usage_event_id is not None
    assert done.actual is not None and done.actual.cost == Decimal("1.50") and done.actual.tokens == 3100
    again = developer.finops.commit_reservation(r.id, actual={"cost": "9.99"})
    assert again == done  # answered as stored, not re-recorded
    current = admin.finops.get_budget(budget.id).current
    assert current is not None
    assert current.spent == eur("1.50") and current.held == eur("0.00") and current.spent_tokens == 3100

    hold = developer.finops.reserve("llm.invoke", estimate={"cost": "3.00"})
    with pytest.raises(BudgetExceededError):
        developer.finops.reserve("llm.invoke", cost="1.00")
    released = developer.finops.release_reservation(hold.id)
    assert released.status == "released" and released.closed_at is not None
    assert developer.finops.release_reservation(hold.id) == released  # idempotent
    assert developer.finops.get_reservation(hold.id).status == "released"
    after = developer.finops.reserve("llm.invoke", cost="1.00")
    assert after.status == "held"

    with pytest.raises(ConflictError):
        developer.finops.release_reservation(r.id)  # committed
    with pytest.raises(ConflictError):
        developer.finops.commit_reservation(hold.id, cost="1.00")  # released


def test_usage_reporter_names_the_tenant(server: EaiServer, new_key: KeyFactory, tenant: Tenant) -> None:
    with EnterpriseAI(base_url=server.url, api_key=new_key("usage_reporter")) as gw:
        r = gw.finops.reserve("llm.invoke", cost="0.10", tenant_id=tenant.id, ttl_seconds=60)
        assert r.tenant_id == tenant.id
        assert (r.expires_at - r.created_at).total_seconds() == pytest.approx(60, abs=1)
        assert gw.finops.release_reservation(r.id).status == "released"


def test_reservation_context_manager(admin: EnterpriseAI, developer: EnterpriseAI, tenant: Tenant) -> None:
    budget = budget_of(admin, tenant, "5.00")
    with developer.finops.reservation("llm.invoke", cost="1.00", tokens=400) as r:
        assert r.reservation.status == "held"
        r.set_actual(cost="0.75", tokens=300)
    assert r.result is not None and r.result.status == "committed"
    assert r.result.actual is not None and r.result.actual.cost == Decimal("0.75")

    with developer.finops.reservation("llm.invoke", cost="1.25") as plain:
        pass
    assert plain.result is not None and plain.result.actual is not None
    assert plain.result.actual.cost == Decimal("1.25")  # the estimate

    with pytest.raises(RuntimeError, match="model down"):
        with developer.finops.reservation("llm.invoke", cost="2.00") as failing:
            raise RuntimeError("model down")
    assert failing.result is not None and failing.result.status == "released"

    with pytest.raises(BudgetExceededError):
        with developer.finops.reservation("llm.invoke", cost="4.00"):
            pytest.fail("entered a refused reservation")

    current = admin.finops.get_budget(budget.id).current
    assert current is not None and current.spent == eur("2.00") and current.held == eur("0.00")


async def test_async_reservation_context_manager(
    admin: EnterpriseAI, server: EaiServer, new_key: KeyFactory, tenant: Tenant
) -> None:
    budget = budget_of(admin, tenant, "3.00")
    async with AsyncEnterpriseAI(base_url=server.url, api_key=new_key("developer", tenant.id)) as dev:
        await _async_scope(dev, budget)


async def _async_scope(dev: AsyncEnterpriseAI, budget: Budget) -> None:
    async with dev.finops.reservation("llm.invoke", estimate={"cost": "1.00", "tokens": 10}) as r:
        r.set_actual(cost="0.40")
    assert r.result is not None and r.result.status == "committed"
    with pytest.raises(ValueError):
        async with dev.finops.reservation("llm.invoke", cost="2.00") as failing:
            raise ValueError("boom")
    assert failing.result is not None and failing.result.status == "released"
    got = await dev.finops.get_reservation(failing.id)
    assert got.status == "released"
    current = (await dev.finops.get_budget(budget.id)).current
    assert current is not None and current.spent == eur("0.40")


async def test_supersede_and_disable(client: AnyClient, tenant: Tenant, developer: EnterpriseAI) -> None:
    budget = await maybe(
        client.finops.create_budget(
            tenant_id=tenant.id,
            name="small",
            limit=eur("1.00"),
            enforce=True,
            webhook_url="https://h.example/x",
        )
    )
    with pytest.raises(BudgetExceededError):
        developer.finops.reserve("llm.invoke", cost="2.00")

    ten = {"amount": "10", "currency": "EUR"}
    change = await maybe(client.finops.supersede_budget(budget.id, {"limit": ten}))
    assert isinstance(change, BudgetChange) and change.opened is not None
    assert change.closed.id == budget.id and change.closed.status == "closed"
    assert change.closed.effective_to is not None
    assert change.opened.limit == eur("10.00") and change.opened.name == "small" and change.opened.enforce
    assert change.opened.webhook_url == "https://h.example/x" and change.opened.webhook_secret is None
    held = developer.finops.reserve("llm.invoke", cost="2.00")
    developer.finops.release_reservation(held.id)

    off = await maybe(client.finops.disable_budget(change.opened.id))
    assert off.opened is None and off.closed.status == "closed"
    big = developer.finops.reserve("llm.invoke", cost="500.00")  # no budget in force: nothing to enforce
    assert big.status == "held"
    developer.finops.release_reservation(big.id)
    statuses = {b.id: b.status for b in await maybe(client.finops.list_budgets())}
    assert statuses[budget.id] == statuses[change.opened.id] == "closed"


def test_finops_of_a_tenant_creates_its_own(
    server: EaiServer, new_key: KeyFactory, tenant: Tenant, admin: EnterpriseAI
) -> None:
    with EnterpriseAI(base_url=server.url, api_key=new_key("finops", tenant.id)) as finops:
        b = finops.finops.create_budget(name="own", limit={"amount": "2.50", "currency": "USD"})
        assert b.tenant_id == tenant.id and b.limit == Money(Decimal("2.50"), "USD") and not b.enforce
        assert b.webhook_secret is None
    # The admin names the tenant by the client's tenant (X-EAI-Tenant) instead of tenant_id.
    scoped = admin.with_options(tenant=tenant.slug)
    b2 = scoped.finops.create_budget(name="by header", limit="3", currency="USD")
    assert b2.tenant_id == tenant.id


def test_another_tenant_gets_not_found(
    server: EaiServer, new_key: KeyFactory, admin: EnterpriseAI, developer: EnterpriseAI, tenant: Tenant
) -> None:
    budget = budget_of(admin, tenant)
    r = developer.finops.reserve("llm.invoke", cost="1.00")
    stranger = admin.tenants.create(slug=unique("other"), name="Other", id=str(uuid.uuid4()))
    with EnterpriseAI(base_url=server.url, api_key=new_key("tenant_admin", stranger.id), max_retries=0) as c:
        with pytest.raises(NotFoundError):
            c.finops.get_budget(budget.id)
        with pytest.raises(NotFoundError):
            c.finops.get_reservation(r.id)
        with pytest.raises(NotFoundError):
            c.finops.commit_reservation(r.id, cost="1.00")
        with pytest.raises(NotFoundError):
            c.finops.release_reservation(r.id)
        assert budget.id not in [b.id for b in c.finops.list_budgets()]
    assert developer.finops.get_reservation(r.id).status == "held"


def test_amount_arguments_are_checked(admin: EnterpriseAI) -> None:
    with pytest.raises(TypeError, match="cost"):
        admin.finops.reserve("llm.invoke", tokens=10)
    with pytest.raises(TypeError, match="currency"):
        admin.finops.create_budget(name="x", limit="1.00")
