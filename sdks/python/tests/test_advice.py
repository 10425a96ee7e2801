"""SPEC §13's advice against the real server, with the sync and the async client: recommendations
(``finops.gpu_recommendations``), the month's forecast (``finops.gpu_forecast``) and the anomalies
(``finops.gpu_anomalies``).

The recommendations' case: a deployment of the test's own on one GPU for two whole hours, 1 % busy, at a flat
10 USD per GPU-hour. Each hour is idle (0.01 <= 0.05) and the GPU was idle in 2 of the 2 hours it ran
(1 >= 0.5): one ``idle_gpus`` recommendation, the GPU could go.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import AsyncIterator, List, Union

import pytest

from enterprise_ai import (
    Anomaly,
    AnomalyList,
    AsyncEnterpriseAI,
    BudgetForecast,
    EnterpriseAI,
    Forecast,
    ForecastLine,
    ForecastTotal,
    IdleGpu,
    Money,
    Recommendation,
    RecommendationEvidence,
    RecommendationList,
    RecommendationThresholds,
    ValidationError,
)
from enterprise_ai._operations import _month_param

from _server import EaiServer
from helpers import hour_of_samples, maybe, recent_hour, unique

AnyClient = Union[EnterpriseAI, AsyncEnterpriseAI]
UTC = dt.timezone.utc


@pytest.fixture(params=["sync", "async"])
async def client(request: pytest.FixtureRequest, server: EaiServer) -> AsyncIterator[AnyClient]:
    """A platform_admin client, sync or async."""
    if request.param == "sync":
        with EnterpriseAI(base_url=server.url, api_key=server.admin_key) as c:
            yield c
    else:
        async with AsyncEnterpriseAI(base_url=server.url, api_key=server.admin_key) as ac:
            yield ac


def _month(t: dt.datetime) -> dt.datetime:
    return t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def _next_month(t: dt.datetime) -> dt.datetime:
    first = _month(t)
    return (
        first.replace(year=first.year + 1, month=1)
        if first.month == 12
        else first.replace(month=first.month + 1)
    )


async def test_recommendations_find_the_idle_gpu_and_price_it(client: AnyClient, server: EaiServer) -> None:
    deployment = unique("idle-llm")
    gpu = unique("GPU")
    hour = recent_hour(hours_ago=4)
    start, end = hour, hour + dt.timedelta(hours=2)
    await maybe(
        client.finops.create_allocation_policy(
            name="flat",
            deployment_pattern=deployment,
            currency="USD",
            gpu_hourly_cost=10,
            effective_from="2020-01-01",
        )
    )
    samples = hour_of_samples(gpu, deployment, hour, utilization="0.01")
    samples += hour_of_samples(gpu, deployment, hour + dt.timedelta(hours=1), utilization="0.01")
    assert (await maybe(client.finops.gpu_samples(samples))).accepted == 480

    recs = await maybe(
        client.finops.gpu_recommendations(
            start=start, end=end, idle_utilization=Decimal("0.05"), idle_share="0.5", low_utilization=0.3
        )
    )
    assert isinstance(recs, RecommendationList)
    assert (recs.from_, recs.to) == (start, end)
    assert isinstance(recs.thresholds, RecommendationThresholds)
    thresholds = recs.thresholds
    assert (thresholds.idle_utilization, thresholds.idle_share, thresholds.low_utilization) == (
        Decimal("0.05"),
        Decimal("0.5"),
        Decimal("0.3"),
    )
    # Largest monthly savings first (compared within a currency; the unpriced have none).
    for currency in {r.monthly_savings.currency for r in recs.items if r.monthly_savings is not None}:
        priced = [
            r.monthly_savings.amount
            for r in recs.items
            if r.monthly_savings and r.monthly_savings.currency == currency
        ]
        assert priced == sorted(priced, reverse=True), currency

    mine = [r for r in recs.items if r.deployment_id == deployment]
    assert len(mine) == 1, recs.raw
    r = mine[0]
    assert isinstance(r, Recommendation)
    assert (r.kind, r.action, r.model) == ("idle_gpus", "remove_gpus", "H100-80GB")
    assert (r.current_gpus, r.gpus) == (1, 1)
    assert r.mig_profile is None and r.gpu_fraction is None and r.message
    e = r.evidence
    assert isinstance(e, RecommendationEvidence)
    # 2 GPU-hours 1 % busy: 0.02 busy GPU-hours; the busiest hour 0.01 GPU busy; 20 GB of memory throughout.
    assert e.hours == 2 and e.gpu_hours == Decimal(2) and e.busy_gpu_hours == Decimal("0.02")
    assert e.utilization == e.utilization_p50 == e.utilization_p95 == Decimal("0.01")
    assert e.peak_busy_gpus == Decimal("0.01")
    assert e.memory_peak_gb == Decimal(20) and e.profile_memory_gb is None
    assert e.unpriced_gpu_hours == Decimal(0)
    assert e.idle_gpus == [IdleGpu(gpu_uuid=gpu, hours=2, idle_hours=2)]
    # Its 2 idle hours at 10 USD: 20.00 saved over the period; the period is 2 hours, not a calendar month,
    # so a month's is 20.00 x (30 x 24 h) / 2 h = 7200.00.
    assert r.savings is not None and r.monthly_savings is not None and r.cost is not None
    assert isinstance(r.savings, Money)
    assert (r.savings.amount, r.savings.currency) == (Decimal("20.00"), "USD")
    assert str(r.savings.amount) == "20.00"
    assert (r.monthly_savings.amount, r.monthly_savings.currency) == (Decimal("7200.00"), "USD")
    assert r.cost.currency == "USD" and r.cost.amount >= r.savings.amount

    # A tenant's view: the deployment is shared (no sample names a tenant), so none of its recommendations.
    tenant = await maybe(client.tenants.create(slug=unique("rec"), name="Recommendations"))
    scoped = await maybe(
        client.with_options(tenant=tenant.id).finops.gpu_recommendations(start=start, end=end)
    )
    assert isinstance(scoped, RecommendationList)
    assert [x for x in scoped.items if x.deployment_id == deployment] == []

    # A threshold out of 0..1 is the server's validation error, naming the field.
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_recommendations(start=start, end=end, idle_utilization="1.5"))
    assert err.value.fields == ["idle_utilization"]
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_recommendations(start=start, end=end, low_utilization="-0.1"))
    assert err.value.fields == ["low_utilization"]


def _same_currency_sum(lines: List[Money], currency: str) -> Decimal:
    return sum((m.amount for m in lines if m.currency == currency), Decimal(0))


async def test_the_forecast_of_this_month_and_of_the_last(client: AnyClient) -> None:
    now = dt.datetime.now(UTC)
    first = _month(now)
    period = f"{first.year:04d}-{first.month:02d}"

    f = await maybe(client.finops.gpu_forecast(period=period))
    assert isinstance(f, Forecast)
    assert f.period == period
    assert (f.from_, f.to) == (first, _next_month(first))
    assert f.history_from == first - dt.timedelta(days=28)
    # Spend is counted up to a midnight UTC inside the month; the days after it are forecast.
    assert f.as_of.tzinfo is not None and (f.as_of.hour, f.as_of.minute, f.as_of.second) == (0, 0, 0)
    assert f.from_ <= f.as_of <= f.to and f.as_of <= now
    assert f.days_left == (f.to - f.as_of).days
    for line in f.lines:
        assert isinstance(line, ForecastLine)
        for m in (line.spent, line.expected, line.low, line.high):
            assert isinstance(m, Money) and m.currency == line.spent.currency
        assert line.spent.amount <= line.expected.amount and line.spent.amount <= line.low.amount
        assert line.low.amount <= line.high.amount
    # A tenant's lines sum to its totals, per currency, the band too.
    for total in f.tenants:
        assert isinstance(total, ForecastTotal)
        own = [line for line in f.lines if line.tenant_id == total.tenant_id]
        c = total.expected.currency
        for field in ("spent", "expected", "low", "high"):
            assert getattr(total, field).amount == _same_currency_sum([getattr(x, field) for x in own], c)
    for b in f.budgets:
        assert isinstance(b, BudgetForecast) and b.budget_id.startswith("bud_")
        for day in (b.exhausted_on, b.exhausted_on_high):
            assert day is None or (isinstance(day, dt.date) and first.date() <= day < f.to.date())

    # A date names its month; the answer is the same month's.
    same = await maybe(client.finops.gpu_forecast(period=now.date()))
    assert (same.period, same.from_, same.to) == (f.period, f.from_, f.to)

    # A month over: its figures, the band equal to them, nothing left to forecast.
    last = _month(first - dt.timedelta(days=1))
    past = await maybe(client.finops.gpu_forecast(period=dt.date(last.year, last.month, 1)))
    assert isinstance(past, Forecast)
    assert (past.from_, past.to, past.as_of, past.days_left) == (last, first, first, 0)
    for line in past.lines:
        assert line.spent == line.expected == line.low == line.high
    for total in past.tenants:
        assert total.spent == total.expected == total.low == total.high

    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_forecast(period="2026-13"))
    assert err.value.fields == ["period"]


async def test_anomalies_of_a_period_newest_first(client: AnyClient) -> None:
    end = recent_hour(hours_ago=0)
    start = end - dt.timedelta(days=7)
    anomalies = await maybe(client.finops.gpu_anomalies(start=start, end=end))
    assert isinstance(anomalies, AnomalyList)
    assert (anomalies.from_, anomalies.to) == (start, end)
    hours = [a.hour for a in anomalies.items]
    assert hours == sorted(hours, reverse=True)
    for a in anomalies.items:
        assert isinstance(a, Anomaly) and a.id.startswith("anm_")
        assert start <= a.hour < end and a.detected_at >= a.hour
        assert a.metric in ("cost", "gpu_seconds") and a.direction in ("above", "below")
        assert (a.currency is not None) == (a.metric == "cost")
        assert isinstance(a.value, Decimal) and isinstance(a.baseline_median, Decimal)
        assert a.baseline_hours >= 24 and a.message
        if a.deviation_mads is None:
            assert a.baseline_mad == Decimal(0)

    # A period that ends before it starts is the server's validation error.
    with pytest.raises(ValidationError) as err:
        await maybe(client.finops.gpu_anomalies(start=end, end=start))
    assert err.value.fields == ["to"]


def test_the_period_parameter_of_the_forecast() -> None:
    assert _month_param(None) is None
    assert _month_param("2026-11") == "2026-11"
    assert _month_param(dt.date(2026, 11, 30)) == "2026-11"
    assert _month_param(dt.datetime(2027, 2, 1, 12, tzinfo=UTC)) == "2027-02"
    with pytest.raises(ValueError):
        _month_param("")
    with pytest.raises(TypeError):
        _month_param(202611)  # type: ignore[arg-type]
