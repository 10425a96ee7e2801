"""The API's resources, as attributes of a client: ``client.finops``, ``client.providers``, ``client.usage``,
``client.tenants``, ``client.auth``, ``client.audit``.

Each sync method has an async twin of the same name and signature on :class:`AsyncEnterpriseAI`'s resources.
Both only hand the shared operation (:mod:`enterprise_ai._operations`) to their client's driver.
"""

from __future__ import annotations

import logging
import os
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    Iterable,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Type,
    TypeVar,
    Union,
)

from . import _operations as ops
from ._core import ClientConfig, Op
from ._json import DateLike
from ._registry import operation
from .types import (
    Allocation,
    AllocationExplanation,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreated,
    AllocationPolicyList,
    AllocationSeries,
    AnomalyList,
    ApiKey,
    ApiKeyCreated,
    ApiKeyList,
    AuditEventList,
    AuditHead,
    Budget,
    BudgetChange,
    BudgetList,
    Catalog,
    Forecast,
    GpuUsageBreakdown,
    Provider,
    RecommendationList,
    Reservation,
    SampleIngestResult,
    SlurmReconciliation,
    Statement,
    StatementIssued,
    StatementList,
    Tenant,
    TenantList,
    TokenCostList,
    UsageIngestResult,
    WhoAmI,
)

__all__ = [
    "AsyncAudit",
    "AsyncAuth",
    "AsyncFinops",
    "AsyncProviders",
    "AsyncReservationScope",
    "AsyncTenants",
    "AsyncUsage",
    "Audit",
    "Auth",
    "Finops",
    "Providers",
    "ReservationScope",
    "Tenants",
    "Usage",
]

logger = logging.getLogger("enterprise_ai")

T = TypeVar("T")
Amount = Union[int, float, str, Decimal]
F = TypeVar("F", bound=Callable[..., Any])


class SyncHost(Protocol):
    """What a sync resource needs of its client."""

    _config: ClientConfig

    def _run(self, op: Op[T]) -> T: ...


class AsyncHost(Protocol):
    """What an async resource needs of its client."""

    _config: ClientConfig

    def _run(self, op: Op[T]) -> Awaitable[T]: ...


def _doc(source: Callable[..., Any]) -> Callable[[F], F]:
    """Gives an async method the docstring of its sync twin."""

    def wrap(f: F) -> F:
        f.__doc__ = source.__doc__
        return f

    return wrap


class _SyncResource:
    def __init__(self, client: SyncHost) -> None:
        self._client = client

    @property
    def _cfg(self) -> ClientConfig:
        return self._client._config

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._cfg.base_url}>"


class _AsyncResource:
    def __init__(self, client: AsyncHost) -> None:
        self._client = client

    @property
    def _cfg(self) -> ClientConfig:
        return self._client._config

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._cfg.base_url}>"


# ---------------------------------------------------------------------------------------------- finops


class Finops(_SyncResource):
    """GPU samples, the allocation, allocation policies, budgets and reservations (``/v1/finops``)."""

    @operation("ingestGpuSamples")
    def gpu_samples(
        self,
        samples: Iterable[Mapping[str, Any]],
        *,
        batch_size: Optional[int] = None,
        split_on_payload_too_large: Optional[bool] = None,
    ) -> SampleIngestResult:
        """Ingests GPU samples (``POST /v1/finops/gpu/samples``; platform_admin or sampler).

        Samples without ``timestamp`` are stamped once with the current instant before the first attempt, so
        that a retry is recognised as a duplicate by the server and never counts twice. Your list and dicts
        are not modified. The samples go in batches of ``batch_size`` (default: the client's
        ``max_batch_size``, 5,000); a batch answered 413 is split in half and re-sent (unless
        ``split_on_payload_too_large=False``). Each batch is atomic; the counts of all batches are summed.

        Raises :class:`~enterprise_ai.ValidationError` with ``details`` indexed in *your* list when a sample
        is refused; batches before it were stored (``error.partial_result`` counts them).
        """
        return self._client._run(
            ops.gpu_samples(
                self._cfg,
                samples,
                batch_size=batch_size,
                split_on_payload_too_large=split_on_payload_too_large,
            )
        )

    @operation("getGpuAllocation")
    def gpu_allocation(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None
    ) -> Allocation:
        """The GPU cost allocation of ``[start, end)`` (``GET /v1/finops/gpu/allocation``).

        ``start`` and ``end`` are ``"YYYY-MM-DD"`` / RFC 3339 strings, ``date`` or aware ``datetime``. A date
        ``end`` includes that whole UTC day (``start="2026-10-01", end="2026-10-31"`` is October); a
        datetime ``end`` is exclusive. Defaults: ``end`` now, ``start`` 30 days before ``end``.
        """
        return self._client._run(ops.gpu_allocation(self._cfg, start, end))

    @operation("explainGpuAllocation")
    def gpu_allocation_explain(
        self,
        deployment_id: str,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        tenant_id: Optional[str] = None,
    ) -> AllocationExplanation:
        """Why ``deployment_id`` costs what it does over ``[start, end)``, bucket by bucket
        (``GET /v1/finops/gpu/allocation/explain``): per bucket the measured and estimated GPU-seconds,
        each tenant's claim and share, the policy's rates and the exact cost and its split; then the idle
        spread and the one rounding with its largest-remainder step. The rounding's ``amount`` lines are the
        allocation's figures for the same period::

            e = client.finops.gpu_allocation_explain("vllm-llama-70b", start="2026-10-01", end="2026-10-31")
            e.rounding[0].cost, e.amount("8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10")

        A tenant's key sees a deployment only when its tenant is charged on it, every other tenant summed into
        one ``other_tenants`` party (otherwise :class:`~enterprise_ai.NotFoundError`); a platform key may pass
        ``tenant_id`` to see what that tenant sees. ``start`` and ``end`` as for :meth:`gpu_allocation`.
        """
        return self._client._run(ops.gpu_allocation_explain(self._cfg, deployment_id, start, end, tenant_id))

    @operation("getGpuUsageBreakdown")
    def gpu_usage(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        group_by: Union[str, Sequence[str], None] = None,
        filter: Optional[Mapping[str, Union[str, Sequence[str]]]] = None,
    ) -> GpuUsageBreakdown:
        """GPU time and cost of ``[start, end)`` per pod, node, GPU, namespace, deployment, tenant, model or
        share method (``GET /v1/finops/gpu/usage``): one row per value of the ``group_by`` dimensions (a
        sequence such as ``["namespace", "pod"]``, or one string; default ``deployment``), kept by
        ``filter`` (dimension -> a value or a sequence of values: any value of one dimension, every
        dimension). A deployment's rows sum to its :meth:`gpu_allocation` cost to the cent, and a filter
        keeps the unfiltered answer's cents::

            u = client.finops.gpu_usage(start="2026-10-01", end="2026-10-31", group_by=["node", "gpu"],
                                        filter={"deployment": "vllm-llama-70b"})
            u.rows[0].group, u.rows[0].gpu_seconds, u.total("EUR")

        ``gpu`` is the physical device (a GPU shared by several pods is one value), and a row grouped by it
        has its share of the GPU's time (``gpu_share``, platform keys); ``share`` is how the time's share of
        its GPU was obtained (``exclusive``, ``mig``, ``measured``, ``equal``): group by
        ``["pod", "gpu", "share"]`` to see each pod's share of a shared GPU and how it was measured.

        A tenant's key sees the rows of its dedicated deployments only. An unknown dimension is a
        :class:`~enterprise_ai.ValidationError` naming ``group_by`` or ``filter``. ``start`` and ``end`` as
        for :meth:`gpu_allocation`.
        """
        return self._client._run(ops.gpu_usage(self._cfg, start, end, group_by, filter))

    @operation("getGpuAllocationFocus")
    def gpu_allocation_focus(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        format: str = "csv",
        version: Optional[str] = None,
        granularity: Optional[str] = None,
    ) -> bytes:
        """The allocation of ``[start, end)`` as a FOCUS file, its bytes
        (``GET /v1/finops/gpu/allocation/focus``; the allocation's readers, a tenant's: its rows only).

        ``format``: ``"csv"`` (RFC 4180, a header line; default) or ``"parquet"``. ``version``: the FOCUS
        columns, ``"1.3"`` (left out: the server's default, with the split-cost columns such as
        ``AllocatedMethodId``) or ``"1.2"``. ``granularity``: a row per tenant x deployment x policy x UTC
        ``"day"`` (left out: the default) or ``"hour"``. ``BilledCost`` sums to the allocation's
        ``allocated`` for the same period (a platform_admin also gets the ``x_Unallocated`` rows: then it
        sums to the cost). ``start`` and ``end`` as for :meth:`gpu_allocation`. Another ``format``,
        ``version`` or ``granularity``, or a bad period, is a :class:`~enterprise_ai.ValidationError` naming
        the field::

            csv = client.finops.gpu_allocation_focus(start="2026-10-01", end="2026-10-31", version="1.2")
            rows = list(csv_module.DictReader(io.StringIO(csv.decode("utf-8"))))
        """
        return self._client._run(
            ops.gpu_allocation_focus(self._cfg, start, end, format, version, granularity)
        )

    def gpu_allocation_focus_to_file(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        format: str = "csv",
        version: Optional[str] = None,
        granularity: Optional[str] = None,
    ) -> Path:
        """:meth:`gpu_allocation_focus` written to ``path`` (replaced if it exists; nothing is written on an
        error). Returns the path::

            client.finops.gpu_allocation_focus_to_file("october.parquet", start="2026-10-01",
                                                       end="2026-10-31", format="parquet")
        """
        data = self.gpu_allocation_focus(
            start=start, end=end, format=format, version=version, granularity=granularity
        )
        target = Path(path)
        target.write_bytes(data)
        return target

    @operation("getGpuTokenCosts")
    def gpu_token_costs(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        basis: str = "allocation",
        aggregate: str = "deployment",
    ) -> TokenCostList:
        """Cost per million tokens of ``[start, end)``, blended, input and output
        (``GET /v1/finops/gpu/token-costs``; the allocation's readers, a tenant's: its share only).

        ``basis``: ``"allocation"`` (the allocated cost, idle included: reconciles to the allocation) or
        ``"usage"`` (busy GPU-seconds only). ``aggregate``: ``"deployment"``, ``"tenant"`` (each tenant with
        its deployments) or ``"model"``. ``start`` and ``end`` as for :meth:`gpu_allocation`. Another value
        is a :class:`~enterprise_ai.ValidationError` from the server.
        """
        return self._client._run(ops.gpu_token_costs(self._cfg, start, end, basis, aggregate))

    @operation("getGpuAllocationSeries")
    def gpu_allocation_series(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None, step: str = "day"
    ) -> AllocationSeries:
        """Cost over time: ``[start, end)`` cut into steps of ``step`` (``"hour"``, ``"day"``, ``"week"`` from
        Monday, ``"month"``; UTC; at most 1,000 steps) (``GET /v1/finops/gpu/allocation/series``).

        Each step's cost, allocated and unallocated are the period's apportioned, so that the steps sum to
        the period (and to :meth:`gpu_allocation`) to the cent. ``start`` and ``end`` as for
        :meth:`gpu_allocation`.
        """
        return self._client._run(ops.gpu_allocation_series(self._cfg, start, end, step))

    @operation("reconcileSlurmJobs")
    def gpu_slurm_reconciliation(
        self,
        sacct: ops.SacctDocument,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        idle_below: Optional[ops.DecimalLike] = None,
    ) -> SlurmReconciliation:
        """Slurm's accounting of its GPU jobs over ``[start, end)`` beside what was measured of them
        (``POST /v1/finops/gpu/slurm/reconciliation``; the allocation's readers, a tenant's key: the jobs of
        its dedicated deployments only).

        ``sacct`` is the output of ``sacct --json -a -X -S <start> -E <end>``: its text (``str`` or
        ``bytes``, sent as it is) or its parsed JSON (a dict). Per job with GPUs in the period: the
        GPU-seconds Slurm allocated, those measured (the samplers' pod ``job-<id>``), how busy, its cost, and
        a ``status``: ``ok``, ``idle`` (busy under ``idle_below`` of the allocated time; a ``Decimal`` or a
        decimal string from 0 to 1, default ``0.1``), ``not_measured`` or ``not_in_slurm``::

            out = subprocess.run(["sacct", "--json", "-a", "-X", "-S", "2026-10-01", "-E", "2026-10-31"],
                                 capture_output=True, check=True).stdout
            r = client.finops.gpu_slurm_reconciliation(out, start="2026-10-01", end="2026-10-31")
            r.idle_cost, [(j.job_id, j.account, j.status) for j in r.with_status("idle")]

        ``start`` and ``end`` as for :meth:`gpu_allocation`. A document without ``jobs``, an ``idle_below``
        out of range or a bad period is a :class:`~enterprise_ai.ValidationError` naming ``body``,
        ``idle_below``, ``from`` or ``to``.
        """
        return self._client._run(ops.gpu_slurm_reconciliation(self._cfg, sacct, start, end, idle_below))

    @operation("getGpuRecommendations")
    def gpu_recommendations(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        idle_utilization: Optional[ops.DecimalLike] = None,
        idle_share: Optional[ops.DecimalLike] = None,
        low_utilization: Optional[ops.DecimalLike] = None,
    ) -> RecommendationList:
        """What to do about the idle and oversized GPUs of ``[start, end)``, with the savings
        (``GET /v1/finops/gpu/recommendations``; the allocation's readers, a tenant's key: its dedicated
        deployments only). Items by ``monthly_savings``, largest first::

            recs = client.finops.gpu_recommendations(start="2026-10-01", end="2026-11-01",
                                                     idle_utilization="0.05")
            [(r.kind, r.deployment_id, r.action, r.gpus, r.monthly_savings) for r in recs]

        Per deployment, a ``kind``: ``idle_gpus`` (GPUs busy at most ``idle_utilization`` of an hour for at
        least ``idle_share`` of the hours they ran: they could go), ``low_utilization`` (the others, busy
        under ``low_utilization`` of their GPU-hours: fewer GPUs, a MIG profile or a share of a GPU) or
        ``unpriced`` (GPU time no policy prices: add one). ``evidence`` holds the figures it rests on;
        ``savings`` is the period's, ``monthly_savings`` a month's (``Money``, exact).

        The thresholds are shares from 0 to 1 (a ``Decimal`` or a decimal string, e.g. ``"0.3"``; left out:
        the server's, 0.05, 0.5 and 0.3); ``thresholds`` in the answer gives those applied. ``start`` and
        ``end`` as for :meth:`gpu_allocation`. A threshold out of range or a bad period is a
        :class:`~enterprise_ai.ValidationError` naming the field.
        """
        return self._client._run(
            ops.gpu_recommendations(self._cfg, start, end, idle_utilization, idle_share, low_utilization)
        )

    @operation("getGpuForecast")
    def gpu_forecast(self, *, period: Optional[ops.MonthLike] = None) -> Forecast:
        """The month's expected spend per tenant and deployment, and when the budgets run out
        (``GET /v1/finops/gpu/forecast``; the allocation's readers, a tenant's key: its own lines and
        budgets).

        ``period``: the month, ``"YYYY-MM"`` or a ``date`` (its month); default the current month (UTC).
        Spend is counted to ``as_of`` (a midnight UTC); the days left are a straight line fitted to the
        daily costs since ``history_from`` (28 days before the month), times a factor per weekday. Each line
        (tenant x deployment x currency) and each tenant's total has ``spent``, ``expected`` and the band
        ``low``/``high``; each budget in force the day its limit is expected to be reached
        (``exhausted_on``, at ``expected``) and the earliest (``exhausted_on_high``)::

            f = client.finops.gpu_forecast(period="2026-11")
            f.days_left, [(t.tenant_id, t.expected) for t in f.tenants]
            [(b.name, b.exhausted_on) for b in f.budgets]

        Another ``period`` is a :class:`~enterprise_ai.ValidationError` naming ``period``.
        """
        return self._client._run(ops.gpu_forecast(self._cfg, period))

    @operation("listGpuAnomalies")
    def gpu_anomalies(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None
    ) -> AnomalyList:
        """The hours of ``[start, end)`` whose cost or GPU time was far from their deployment's baseline
        (``GET /v1/finops/gpu/anomalies``; the allocation's readers, a tenant's key: its dedicated
        deployments' only). Newest hour first::

            for a in client.finops.gpu_anomalies(start="2026-11-01", end="2026-11-08"):
                a.hour, a.deployment_id, a.metric, a.direction, a.value, a.baseline_median

        An hour is an anomaly when its ``metric`` (``cost``, in ``currency``, or ``gpu_seconds``) is far, in
        scaled median absolute deviations (``deviation_mads``; ``None`` when the baseline's MAD is 0), from
        the median of the deployment's hours of the trailing weeks (``baseline_hours`` of them). The server
        checks each closed hour once it is settled. ``start`` and ``end`` as for :meth:`gpu_allocation`.
        """
        return self._client._run(ops.gpu_anomalies(self._cfg, start, end))

    @operation("listGpuStatements")
    def gpu_statements(
        self, *, period: Optional[ops.MonthLike] = None, tenant_id: Optional[str] = None
    ) -> StatementList:
        """The issued statements, without their lines (``GET /v1/finops/gpu/statements``; the allocation's
        readers, a tenant's key: its own). Newest period first, then by number::

            for s in client.finops.gpu_statements(period="2026-10").statements:
                s.number, s.tenant_name, s.totals

        ``period``: only this month, ``"YYYY-MM"`` or a ``date`` (its month). ``tenant_id``: only this
        tenant's (platform callers). A bad ``period`` is a :class:`~enterprise_ai.ValidationError` naming it.
        """
        return self._client._run(ops.gpu_statements(self._cfg, period, tenant_id))

    @operation("issueGpuStatements")
    def issue_gpu_statements(
        self,
        period: ops.MonthLike,
        *,
        tenant_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> StatementIssued:
        """Issues the statements of a month that is over (``POST /v1/finops/gpu/statements``; platform_admin).

        Each tenant with cost in the month gets a numbered statement (``ST-YYYY-MM-NNNN``) of its allocated
        cost, and with no ``tenant_id`` the platform gets one of the unallocated capacity (``tenant_id`` the
        nil uuid). A statement is issued once and never changes: one issued before comes back under
        ``already_issued``, never twice::

            out = client.finops.issue_gpu_statements("2026-10")
            [(s.number, s.tenant_id, s.totals) for s in out.issued]

        ``period``: ``"YYYY-MM"`` or a ``date`` (its month). ``tenant_id``: that tenant's statement only.
        ``idempotency_key``: sent as ``Idempotency-Key`` (default a fresh one, the same on each retry). A
        month not over is a :class:`~enterprise_ai.ValidationError` naming ``period``.
        """
        return self._client._run(ops.issue_gpu_statements(self._cfg, period, tenant_id, idempotency_key))

    @operation("getGpuStatement")
    def gpu_statement(self, number: str) -> Statement:
        """One issued statement with its lines, and the adjustments data that arrived since made to it
        (``GET /v1/finops/gpu/statements/{number}``; the allocation's readers, a tenant's key: its own,
        another's is a :class:`~enterprise_ai.NotFoundError`)::

            st = client.finops.gpu_statement("ST-2026-10-0001")
            st.totals, [(line.deployment_id, line.gpu_hours, line.amount) for line in st.lines]
            st.adjustments, st.adjusted_totals, st.as_of

        ``lines`` and ``totals`` are as issued; ``adjustments`` (the allocation now minus the issued line,
        per deployment and policy that changed) are computed at ``as_of``, and ``adjusted_totals`` =
        ``totals`` + ``adjustments``. Amounts and quantities are ``Decimal``.
        """
        return self._client._run(ops.gpu_statement(self._cfg, number))

    @operation("getGpuStatement")
    def gpu_statement_csv(self, number: str) -> str:
        """:meth:`gpu_statement` as CSV text (``format=csv``): a header
        ``kind,deployment_id,policy_id,gpu_hours,energy_kwh,amount,currency``, the charge lines, a ``total``
        line per currency, the adjustment lines and an ``adjusted_total`` line per currency::

            rows = list(csv.DictReader(io.StringIO(client.finops.gpu_statement_csv("ST-2026-10-0001"))))
        """
        return self._client._run(ops.gpu_statement_csv(self._cfg, number))

    @operation("createAllocationPolicy")
    def create_allocation_policy(
        self, policy: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> AllocationPolicyCreated:
        """Creates an allocation policy (``POST /v1/finops/allocation-policies``; platform_admin).

        Give the policy as a dict, as keyword arguments, or both (keywords win)::

            client.finops.create_allocation_policy(
                name="local-gpu-default", gpu_hourly_cost="2.10", currency="EUR", effective_from="2026-01-01"
            )

        ``name`` and ``gpu_hourly_cost`` are required. Money and rates may be ``Decimal`` or strings.
        """
        return self._client._run(ops.create_allocation_policy(self._cfg, policy, fields))

    @operation("listAllocationPolicies")
    def list_allocation_policies(self) -> AllocationPolicyList:
        """Every allocation policy, closed and disabled ones included, oldest first."""
        return self._client._run(ops.list_allocation_policies(self._cfg))

    @operation("getAllocationPolicy")
    def get_allocation_policy(self, policy_id: str) -> AllocationPolicy:
        """One allocation policy, closed or disabled ones too (an unknown id is
        :class:`~enterprise_ai.NotFoundError`)."""
        return self._client._run(ops.get_allocation_policy(self._cfg, policy_id))

    @operation("supersedeAllocationPolicy")
    def supersede_allocation_policy(
        self, policy_id: str, changes: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> AllocationPolicyChange:
        """Closes a policy at ``effective_at`` (default now) and opens its replacement: the closed policy's
        fields overridden by the ones given (``POST .../{id}/supersede``; platform_admin)."""
        return self._client._run(ops.supersede_allocation_policy(self._cfg, policy_id, changes, fields))

    @operation("disableAllocationPolicy")
    def disable_allocation_policy(
        self, policy_id: str, effective_at: Optional[DateLike] = None
    ) -> AllocationPolicyChange:
        """Closes a policy at ``effective_at`` (default now) and opens a disabled copy
        (``POST .../{id}/disable``; platform_admin)."""
        return self._client._run(ops.disable_allocation_policy(self._cfg, policy_id, effective_at))

    # ------------------------------------------------------------------ budgets

    @operation("createBudget")
    def create_budget(self, budget: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> Budget:
        """Creates a monthly budget (``POST /v1/finops/budgets``; platform_admin for any tenant, finops for
        its own). Give it as a dict, as keyword arguments, or both (keywords win)::

            client.finops.create_budget(
                tenant_id=acme.id, name="acme monthly", limit={"amount": "1000.00", "currency": "EUR"},
                enforce=True, webhook_url="https://hooks.example.com/eai",
            )

        ``limit`` may also be a :class:`~enterprise_ai.Money`, or a bare amount with ``currency="EUR"``.
        The tenant: ``tenant_id``, else the client's ``tenant``, else a finops key's own. The answer carries
        ``webhook_secret`` this once when a ``webhook_url`` was given.
        """
        return self._client._run(ops.create_budget(self._cfg, budget, fields))

    @operation("listBudgets")
    def list_budgets(self) -> BudgetList:
        """The budgets the caller may read (closed ones included, oldest first), each with the month's
        ``current`` standing when in force."""
        return self._client._run(ops.list_budgets(self._cfg))

    @operation("getBudget")
    def get_budget(self, budget_id: str) -> Budget:
        """One budget (another tenant's is :class:`~enterprise_ai.NotFoundError`)."""
        return self._client._run(ops.get_budget(self._cfg, budget_id))

    @operation("supersedeBudget")
    def supersede_budget(
        self, budget_id: str, changes: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> BudgetChange:
        """Closes a budget at ``effective_at`` (default now) and opens its successor with the fields given
        (the others, and the webhook secret, carried over) (``POST .../{id}/supersede``)."""
        return self._client._run(ops.supersede_budget(self._cfg, budget_id, changes, fields))

    @operation("disableBudget")
    def disable_budget(self, budget_id: str, effective_at: Optional[DateLike] = None) -> BudgetChange:
        """Closes a budget at ``effective_at`` (default now); nothing opens (``opened`` is ``None``)."""
        return self._client._run(ops.disable_budget(self._cfg, budget_id, effective_at))

    # ------------------------------------------------------------- reservations

    @operation("createReservation")
    def reserve(
        self,
        action: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        currency: Optional[str] = None,
        estimate: Optional[Mapping[str, Any]] = None,
        deployment_id: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        tenant_id: Optional[str] = None,
    ) -> Reservation:
        """Reserves ``cost`` (and ``tokens``) against the tenant's enforcing budgets
        (``POST /v1/finops/reservations``): a ``held`` :class:`~enterprise_ai.Reservation` until its
        ``expires_at`` (``ttl_seconds``, default 300), or :class:`~enterprise_ai.BudgetExceededError` (402)
        and nothing held. The estimate may also be given as ``estimate={"cost", "tokens", "currency"}``.

        Like every POST it carries an ``Idempotency-Key`` (the same on its retries): a retry after a lost
        answer is answered with the first reservation, never a second hold.
        """
        amounts = ops._amounts(estimate, cost, tokens, currency, "estimate")
        return self._client._run(
            ops.reserve(self._cfg, action, amounts, deployment_id, ttl_seconds, tenant_id)
        )

    @operation("getReservation")
    def get_reservation(self, reservation_id: str) -> Reservation:
        """One reservation (a hold past its expiry reads ``expired``)."""
        return self._client._run(ops.get_reservation(self._cfg, reservation_id))

    @operation("commitReservation")
    def commit_reservation(
        self,
        reservation_id: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        actual: Optional[Mapping[str, Any]] = None,
    ) -> Reservation:
        """Commits what was actually spent: records one usage event and frees the hold. Idempotent: a
        committed reservation is answered as it is; a released one is
        :class:`~enterprise_ai.ConflictError`."""
        amounts = ops._amounts(actual, cost, tokens, None, "actual")
        return self._client._run(ops.commit_reservation(self._cfg, reservation_id, amounts))

    @operation("releaseReservation")
    def release_reservation(self, reservation_id: str) -> Reservation:
        """Frees the hold (idempotent); a committed reservation is :class:`~enterprise_ai.ConflictError`."""
        return self._client._run(ops.release_reservation(self._cfg, reservation_id))

    def reservation(
        self,
        action: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        currency: Optional[str] = None,
        estimate: Optional[Mapping[str, Any]] = None,
        deployment_id: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        tenant_id: Optional[str] = None,
    ) -> ReservationScope:
        """A reservation as a context manager: reserves on enter (:class:`~enterprise_ai.BudgetExceededError`
        when refused), commits on a normal exit -- the actual given to ``set_actual``, else the estimate --
        and releases when the block raises (the exception propagates)::

            with client.finops.reservation("llm.invoke", cost="0.50", tokens=4000) as r:
                answer = call_the_model()
                r.set_actual(cost="0.42", tokens=3100)
            print(r.result.status)  # committed
        """
        amounts = ops._amounts(estimate, cost, tokens, currency, "estimate")
        return ReservationScope(self, action, amounts, deployment_id, ttl_seconds, tenant_id)


class AsyncFinops(_AsyncResource):
    """GPU samples, the allocation, allocation policies, budgets and reservations (``/v1/finops``), async."""

    @_doc(Finops.gpu_samples)
    @operation("ingestGpuSamples")
    async def gpu_samples(
        self,
        samples: Iterable[Mapping[str, Any]],
        *,
        batch_size: Optional[int] = None,
        split_on_payload_too_large: Optional[bool] = None,
    ) -> SampleIngestResult:
        return await self._client._run(
            ops.gpu_samples(
                self._cfg,
                samples,
                batch_size=batch_size,
                split_on_payload_too_large=split_on_payload_too_large,
            )
        )

    @_doc(Finops.gpu_allocation)
    @operation("getGpuAllocation")
    async def gpu_allocation(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None
    ) -> Allocation:
        return await self._client._run(ops.gpu_allocation(self._cfg, start, end))

    @_doc(Finops.gpu_allocation_explain)
    @operation("explainGpuAllocation")
    async def gpu_allocation_explain(
        self,
        deployment_id: str,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        tenant_id: Optional[str] = None,
    ) -> AllocationExplanation:
        return await self._client._run(
            ops.gpu_allocation_explain(self._cfg, deployment_id, start, end, tenant_id)
        )

    @_doc(Finops.gpu_usage)
    @operation("getGpuUsageBreakdown")
    async def gpu_usage(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        group_by: Union[str, Sequence[str], None] = None,
        filter: Optional[Mapping[str, Union[str, Sequence[str]]]] = None,
    ) -> GpuUsageBreakdown:
        return await self._client._run(ops.gpu_usage(self._cfg, start, end, group_by, filter))

    @_doc(Finops.gpu_allocation_focus)
    @operation("getGpuAllocationFocus")
    async def gpu_allocation_focus(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        format: str = "csv",
        version: Optional[str] = None,
        granularity: Optional[str] = None,
    ) -> bytes:
        return await self._client._run(
            ops.gpu_allocation_focus(self._cfg, start, end, format, version, granularity)
        )

    @_doc(Finops.gpu_allocation_focus_to_file)
    async def gpu_allocation_focus_to_file(
        self,
        path: Union[str, os.PathLike[str]],
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        format: str = "csv",
        version: Optional[str] = None,
        granularity: Optional[str] = None,
    ) -> Path:
        data = await self.gpu_allocation_focus(
            start=start, end=end, format=format, version=version, granularity=granularity
        )
        target = Path(path)
        target.write_bytes(data)
        return target

    @_doc(Finops.gpu_token_costs)
    @operation("getGpuTokenCosts")
    async def gpu_token_costs(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        basis: str = "allocation",
        aggregate: str = "deployment",
    ) -> TokenCostList:
        return await self._client._run(ops.gpu_token_costs(self._cfg, start, end, basis, aggregate))

    @_doc(Finops.gpu_allocation_series)
    @operation("getGpuAllocationSeries")
    async def gpu_allocation_series(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None, step: str = "day"
    ) -> AllocationSeries:
        return await self._client._run(ops.gpu_allocation_series(self._cfg, start, end, step))

    @_doc(Finops.gpu_slurm_reconciliation)
    @operation("reconcileSlurmJobs")
    async def gpu_slurm_reconciliation(
        self,
        sacct: ops.SacctDocument,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        idle_below: Optional[ops.DecimalLike] = None,
    ) -> SlurmReconciliation:
        return await self._client._run(ops.gpu_slurm_reconciliation(self._cfg, sacct, start, end, idle_below))

    @_doc(Finops.gpu_recommendations)
    @operation("getGpuRecommendations")
    async def gpu_recommendations(
        self,
        *,
        start: Optional[DateLike] = None,
        end: Optional[DateLike] = None,
        idle_utilization: Optional[ops.DecimalLike] = None,
        idle_share: Optional[ops.DecimalLike] = None,
        low_utilization: Optional[ops.DecimalLike] = None,
    ) -> RecommendationList:
        return await self._client._run(
            ops.gpu_recommendations(self._cfg, start, end, idle_utilization, idle_share, low_utilization)
        )

    @_doc(Finops.gpu_forecast)
    @operation("getGpuForecast")
    async def gpu_forecast(self, *, period: Optional[ops.MonthLike] = None) -> Forecast:
        return await self._client._run(ops.gpu_forecast(self._cfg, period))

    @_doc(Finops.gpu_anomalies)
    @operation("listGpuAnomalies")
    async def gpu_anomalies(
        self, *, start: Optional[DateLike] = None, end: Optional[DateLike] = None
    ) -> AnomalyList:
        return await self._client._run(ops.gpu_anomalies(self._cfg, start, end))

    @_doc(Finops.gpu_statements)
    @operation("listGpuStatements")
    async def gpu_statements(
        self, *, period: Optional[ops.MonthLike] = None, tenant_id: Optional[str] = None
    ) -> StatementList:
        return await self._client._run(ops.gpu_statements(self._cfg, period, tenant_id))

    @_doc(Finops.issue_gpu_statements)
    @operation("issueGpuStatements")
    async def issue_gpu_statements(
        self,
        period: ops.MonthLike,
        *,
        tenant_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> StatementIssued:
        return await self._client._run(
            ops.issue_gpu_statements(self._cfg, period, tenant_id, idempotency_key)
        )

    @_doc(Finops.gpu_statement)
    @operation("getGpuStatement")
    async def gpu_statement(self, number: str) -> Statement:
        return await self._client._run(ops.gpu_statement(self._cfg, number))

    @_doc(Finops.gpu_statement_csv)
    @operation("getGpuStatement")
    async def gpu_statement_csv(self, number: str) -> str:
        return await self._client._run(ops.gpu_statement_csv(self._cfg, number))

    @_doc(Finops.create_allocation_policy)
    @operation("createAllocationPolicy")
    async def create_allocation_policy(
        self, policy: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> AllocationPolicyCreated:
        return await self._client._run(ops.create_allocation_policy(self._cfg, policy, fields))

    @_doc(Finops.list_allocation_policies)
    @operation("listAllocationPolicies")
    async def list_allocation_policies(self) -> AllocationPolicyList:
        return await self._client._run(ops.list_allocation_policies(self._cfg))

    @_doc(Finops.get_allocation_policy)
    @operation("getAllocationPolicy")
    async def get_allocation_policy(self, policy_id: str) -> AllocationPolicy:
        return await self._client._run(ops.get_allocation_policy(self._cfg, policy_id))

    @_doc(Finops.supersede_allocation_policy)
    @operation("supersedeAllocationPolicy")
    async def supersede_allocation_policy(
        self, policy_id: str, changes: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> AllocationPolicyChange:
        return await self._client._run(ops.supersede_allocation_policy(self._cfg, policy_id, changes, fields))

    @_doc(Finops.disable_allocation_policy)
    @operation("disableAllocationPolicy")
    async def disable_allocation_policy(
        self, policy_id: str, effective_at: Optional[DateLike] = None
    ) -> AllocationPolicyChange:
        return await self._client._run(ops.disable_allocation_policy(self._cfg, policy_id, effective_at))

    @_doc(Finops.create_budget)
    @operation("createBudget")
    async def create_budget(self, budget: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> Budget:
        return await self._client._run(ops.create_budget(self._cfg, budget, fields))

    @_doc(Finops.list_budgets)
    @operation("listBudgets")
    async def list_budgets(self) -> BudgetList:
        return await self._client._run(ops.list_budgets(self._cfg))

    @_doc(Finops.get_budget)
    @operation("getBudget")
    async def get_budget(self, budget_id: str) -> Budget:
        return await self._client._run(ops.get_budget(self._cfg, budget_id))

    @_doc(Finops.supersede_budget)
    @operation("supersedeBudget")
    async def supersede_budget(
        self, budget_id: str, changes: Optional[Mapping[str, Any]] = None, /, **fields: Any
    ) -> BudgetChange:
        return await self._client._run(ops.supersede_budget(self._cfg, budget_id, changes, fields))

    @_doc(Finops.disable_budget)
    @operation("disableBudget")
    async def disable_budget(self, budget_id: str, effective_at: Optional[DateLike] = None) -> BudgetChange:
        return await self._client._run(ops.disable_budget(self._cfg, budget_id, effective_at))

    @_doc(Finops.reserve)
    @operation("createReservation")
    async def reserve(
        self,
        action: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        currency: Optional[str] = None,
        estimate: Optional[Mapping[str, Any]] = None,
        deployment_id: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        tenant_id: Optional[str] = None,
    ) -> Reservation:
        amounts = ops._amounts(estimate, cost, tokens, currency, "estimate")
        return await self._client._run(
            ops.reserve(self._cfg, action, amounts, deployment_id, ttl_seconds, tenant_id)
        )

    @_doc(Finops.get_reservation)
    @operation("getReservation")
    async def get_reservation(self, reservation_id: str) -> Reservation:
        return await self._client._run(ops.get_reservation(self._cfg, reservation_id))

    @_doc(Finops.commit_reservation)
    @operation("commitReservation")
    async def commit_reservation(
        self,
        reservation_id: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        actual: Optional[Mapping[str, Any]] = None,
    ) -> Reservation:
        amounts = ops._amounts(actual, cost, tokens, None, "actual")
        return await self._client._run(ops.commit_reservation(self._cfg, reservation_id, amounts))

    @_doc(Finops.release_reservation)
    @operation("releaseReservation")
    async def release_reservation(self, reservation_id: str) -> Reservation:
        return await self._client._run(ops.release_reservation(self._cfg, reservation_id))

    def reservation(
        self,
        action: str,
        *,
        cost: Optional[Amount] = None,
        tokens: Optional[Union[int, str]] = None,
        currency: Optional[str] = None,
        estimate: Optional[Mapping[str, Any]] = None,
        deployment_id: Optional[str] = None,
        ttl_seconds: Optional[int] = None,
        tenant_id: Optional[str] = None,
    ) -> AsyncReservationScope:
        """A reservation as an async context manager (``async with``): reserves on enter, commits on a
        normal exit (the actual given to ``set_actual``, else the estimate), releases when the block
        raises."""
        amounts = ops._amounts(estimate, cost, tokens, currency, "estimate")
        return AsyncReservationScope(self, action, amounts, deployment_id, ttl_seconds, tenant_id)


class _ScopeBase:
    """What the sync and async reservation scopes share."""

    def __init__(
        self,
        action: str,
        estimate: Dict[str, Any],
        deployment_id: Optional[str],
        ttl_seconds: Optional[int],
        tenant_id: Optional[str],
    ) -> None:
        self._action = action
        self._estimate = estimate
        self._deployment_id = deployment_id
        self._ttl_seconds = ttl_seconds
        self._tenant_id = tenant_id
        self._actual: Optional[Dict[str, Any]] = None
        self._held: Optional[Reservation] = None
        #: The reservation as committed or released on exit (``None`` before).
        self.result: Optional[Reservation] = None

    @property
    def reservation(self) -> Reservation:
        """The held reservation (after enter)."""
        if self._held is None:
            raise RuntimeError("the reservation is made on entering the `with` block")
        return self._held

    @property
    def id(self) -> str:
        """The held reservation's id."""
        return self.reservation.id

    def set_actual(self, *, cost: Amount, tokens: Optional[Union[int, str]] = None) -> None:
        """What was actually spent: committed on a normal exit instead of the estimate."""
        actual: Dict[str, Any] = {"cost": cost}
        if tokens is not None:
            actual["tokens"] = tokens
        self._actual = actual

    def _to_commit(self) -> Dict[str, Any]:
        if self._actual is not None:
            return self._actual
        return {k: v for k, v in self._estimate.items() if k in ("cost", "tokens")}

    def __repr__(self) -> str:
        rid = self._held.id if self._held is not None else None
        return f"<{type(self).__name__} {self._action!r} id={rid!r}>"


class ReservationScope(_ScopeBase):
    """``with client.finops.reservation(...) as r:`` -- see :meth:`Finops.reservation`."""

    def __init__(
        self,
        finops: Finops,
        action: str,
        estimate: Dict[str, Any],
        deployment_id: Optional[str],
        ttl_seconds: Optional[int],
        tenant_id: Optional[str],
    ) -> None:
        super().__init__(action, estimate, deployment_id, ttl_seconds, tenant_id)
        self._finops = finops

    def __enter__(self) -> ReservationScope:
        f = self._finops
        self._held = f._client._run(
            ops.reserve(
                f._cfg, self._action, self._estimate, self._deployment_id, self._ttl_seconds, self._tenant_id
            )
        )
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        held = self.reservation
        if exc_type is None:
            self.result = self._finops.commit_reservation(held.id, actual=self._to_commit())
            return
        try:
            self.result = self._finops.release_reservation(held.id)
        except Exception as release_error:  # the block's exception matters more
            logger.warning("enterprise_ai: releasing reservation %s failed: %s", held.id, release_error)


class AsyncReservationScope(_ScopeBase):
    """``async with client.finops.reservation(...) as r:`` -- see :meth:`AsyncFinops.reservation`."""

    def __init__(
        self,
        finops: AsyncFinops,
        action: str,
        estimate: Dict[str, Any],
        deployment_id: Optional[str],
        ttl_seconds: Optional[int],
        tenant_id: Optional[str],
    ) -> None:
        super().__init__(action, estimate, deployment_id, ttl_seconds, tenant_id)
        self._finops = finops

    async def __aenter__(self) -> AsyncReservationScope:
        f = self._finops
        self._held = await f._client._run(
            ops.reserve(
                f._cfg, self._action, self._estimate, self._deployment_id, self._ttl_seconds, self._tenant_id
            )
        )
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        held = self.reservation
        if exc_type is None:
            self.result = await self._finops.commit_reservation(held.id, actual=self._to_commit())
            return
        try:
            self.result = await self._finops.release_reservation(held.id)
        except Exception as release_error:  # the block's exception matters more
            logger.warning("enterprise_ai: releasing reservation %s failed: %s", held.id, release_error)


# --------------------------------------------------------------------------------------------- providers


class Providers(_SyncResource):
    """The local inference providers (``/v1/providers``)."""

    @operation("getProvidersCatalog")
    def catalog(self) -> Catalog:
        """The providers catalog: shared deployments and the caller's tenant's dedicated ones, each with
        its last closed month's ``pricing`` (``GET /v1/providers/catalog``)."""
        return self._client._run(ops.catalog(self._cfg))

    @operation("registerProvider")
    def register(
        self,
        deployment_id: str,
        base_url: str,
        *,
        label: Optional[str] = None,
        enabled: Optional[bool] = None,
        verify: Optional[bool] = None,
    ) -> Provider:
        """Registers a deployment's OpenAI-compatible endpoint (platform_admin; ``POST /v1/providers``);
        a new registration of a deployment replaces the previous one. With ``verify`` (the default) the
        server first calls ``GET {base_url}/models`` and refuses a URL that lists no model
        (:class:`~enterprise_ai.ValidationError` on ``base_url``); ``verify=False`` registers it unconfirmed
        (``discovery == "config"``)."""
        return self._client._run(
            ops.register_provider(self._cfg, deployment_id, base_url, label, enabled, verify)
        )


class AsyncProviders(_AsyncResource):
    """The local inference providers (``/v1/providers``), async."""

    @_doc(Providers.catalog)
    @operation("getProvidersCatalog")
    async def catalog(self) -> Catalog:
        return await self._client._run(ops.catalog(self._cfg))

    @_doc(Providers.register)
    @operation("registerProvider")
    async def register(
        self,
        deployment_id: str,
        base_url: str,
        *,
        label: Optional[str] = None,
        enabled: Optional[bool] = None,
        verify: Optional[bool] = None,
    ) -> Provider:
        return await self._client._run(
            ops.register_provider(self._cfg, deployment_id, base_url, label, enabled, verify)
        )


# ------------------------------------------------------------------------------------------------- usage


class Usage(_SyncResource):
    """Usage events (``/v1/usage``). For workers, see :class:`enterprise_ai.usage.Emitter`."""

    @operation("ingestUsageEvents")
    def events(
        self,
        events: Iterable[Mapping[str, Any]],
        *,
        batch_size: Optional[int] = None,
        split_on_payload_too_large: Optional[bool] = None,
    ) -> UsageIngestResult:
        """Ingests usage events (``POST /v1/usage/events``), upserted by ``(tenant, event_id)``.

        Events without ``event_id`` get a uuid4, without ``schema_version`` ``"1.0"``, without
        ``occurred_at`` the current instant -- once, before the first attempt, so a retry replaces rather
        than doubles. ``result.event_ids`` lists the ids sent, in your order. A tenant key may omit
        ``tenant_id``; a platform or usage_reporter key must give it in each event. Batching as for
        :meth:`Finops.gpu_samples`.
        """
        return self._client._run(
            ops.usage_events(
                self._cfg,
                events,
                batch_size=batch_size,
                split_on_payload_too_large=split_on_payload_too_large,
            )
        )


class AsyncUsage(_AsyncResource):
    """Usage events (``/v1/usage``), async."""

    @_doc(Usage.events)
    @operation("ingestUsageEvents")
    async def events(
        self,
        events: Iterable[Mapping[str, Any]],
        *,
        batch_size: Optional[int] = None,
        split_on_payload_too_large: Optional[bool] = None,
    ) -> UsageIngestResult:
        return await self._client._run(
            ops.usage_events(
                self._cfg,
                events,
                batch_size=batch_size,
                split_on_payload_too_large=split_on_payload_too_large,
            )
        )


# ----------------------------------------------------------------------------------------------- tenants


class Tenants(_SyncResource):
    """Registered tenants (``/v1/tenants``)."""

    @operation("createTenant")
    def create(self, *, slug: str, name: str, id: Optional[str] = None) -> Tenant:
        """Registers a tenant (platform_admin): a unique, immutable ``slug``, a display ``name`` and
        optionally the ``id`` (uuid) of a tenant already seen in data. 409 ``ConflictError`` when the slug or
        the id is registered already."""
        return self._client._run(ops.create_tenant(self._cfg, slug, name, id))

    @operation("listTenants")
    def list(self) -> TenantList:
        """Registered tenants, by slug (a tenant key sees its own)."""
        return self._client._run(ops.list_tenants(self._cfg))

    @operation("getTenant")
    def get(self, key: str) -> Tenant:
        """A tenant by slug or id (404 ``NotFoundError`` when unknown)."""
        return self._client._run(ops.get_tenant(self._cfg, key))


class AsyncTenants(_AsyncResource):
    """Registered tenants (``/v1/tenants``), async."""

    @_doc(Tenants.create)
    @operation("createTenant")
    async def create(self, *, slug: str, name: str, id: Optional[str] = None) -> Tenant:
        return await self._client._run(ops.create_tenant(self._cfg, slug, name, id))

    @_doc(Tenants.list)
    @operation("listTenants")
    async def list(self) -> TenantList:
        return await self._client._run(ops.list_tenants(self._cfg))

    @_doc(Tenants.get)
    @operation("getTenant")
    async def get(self, key: str) -> Tenant:
        return await self._client._run(ops.get_tenant(self._cfg, key))


# -------------------------------------------------------------------------------------------------- auth


class Auth(_SyncResource):
    """The caller's identity and API keys (``/v1/auth``)."""

    @operation("whoAmI")
    def whoami(self) -> WhoAmI:
        """The identity behind the client's API key (and the tenant it is signed in to)."""
        return self._client._run(ops.whoami(self._cfg))

    @operation("createApiKey")
    def create_api_key(
        self,
        *,
        role: str,
        tenant_id: Optional[str] = None,
        name: Optional[str] = None,
        expires_at: Optional[DateLike] = None,
        nodes: Optional[Sequence[str]] = None,
    ) -> ApiKeyCreated:
        """Creates an API key (platform_admin). ``tenant_id`` is required for every role but
        ``platform_admin``, ``sampler`` and ``usage_reporter``; ``nodes`` binds a sampler key to node names.
        The secret is in ``result.key`` only (never in ``repr``)."""
        return self._client._run(ops.create_api_key(self._cfg, role, tenant_id, name, expires_at, nodes))

    @operation("listApiKeys")
    def list_api_keys(self) -> ApiKeyList:
        """API keys (platform_admin: all; tenant_admin: its tenant's), never their secrets."""
        return self._client._run(ops.list_api_keys(self._cfg))

    @operation("revokeApiKey")
    def revoke_api_key(self, key_id: str) -> ApiKey:
        """Revokes a key (``key_3``): its next call gets 401. Idempotent."""
        return self._client._run(ops.revoke_api_key(self._cfg, key_id))

    @operation("rotateApiKey")
    def rotate_api_key(self, key_id: str, *, grace_seconds: Optional[int] = None) -> ApiKeyCreated:
        """Gives a key a new secret (in ``result.key``); the previous one keeps working ``grace_seconds``
        (default 0). A revoked key answers 409 ``ConflictError``."""
        return self._client._run(ops.rotate_api_key(self._cfg, key_id, grace_seconds))


class AsyncAuth(_AsyncResource):
    """The caller's identity and API keys (``/v1/auth``), async."""

    @_doc(Auth.whoami)
    @operation("whoAmI")
    async def whoami(self) -> WhoAmI:
        return await self._client._run(ops.whoami(self._cfg))

    @_doc(Auth.create_api_key)
    @operation("createApiKey")
    async def create_api_key(
        self,
        *,
        role: str,
        tenant_id: Optional[str] = None,
        name: Optional[str] = None,
        expires_at: Optional[DateLike] = None,
        nodes: Optional[Sequence[str]] = None,
    ) -> ApiKeyCreated:
        return await self._client._run(
            ops.create_api_key(self._cfg, role, tenant_id, name, expires_at, nodes)
        )

    @_doc(Auth.list_api_keys)
    @operation("listApiKeys")
    async def list_api_keys(self) -> ApiKeyList:
        return await self._client._run(ops.list_api_keys(self._cfg))

    @_doc(Auth.revoke_api_key)
    @operation("revokeApiKey")
    async def revoke_api_key(self, key_id: str) -> ApiKey:
        return await self._client._run(ops.revoke_api_key(self._cfg, key_id))

    @_doc(Auth.rotate_api_key)
    @operation("rotateApiKey")
    async def rotate_api_key(self, key_id: str, *, grace_seconds: Optional[int] = None) -> ApiKeyCreated:
        return await self._client._run(ops.rotate_api_key(self._cfg, key_id, grace_seconds))


# ------------------------------------------------------------------------------------------------- audit


class Audit(_SyncResource):
    """The audit trail (``/v1/audit``)."""

    @operation("listAuditEvents")
    def events(self, *, after: Optional[int] = None, limit: Optional[int] = None) -> AuditEventList:
        """Audit events with ``seq > after`` (default 0), oldest first, at most ``limit`` (1..1000, default
        100). Page on with ``after=page.last_seq``. platform_admin, auditor, security_officer."""
        return self._client._run(ops.audit_events(self._cfg, after, limit))

    @operation("getAuditHead")
    def head(self) -> AuditHead:
        """The newest event's ``seq`` and ``hash``, to anchor outside the database (platform_admin)."""
        return self._client._run(ops.audit_head(self._cfg))


class AsyncAudit(_AsyncResource):
    """The audit trail (``/v1/audit``), async."""

    @_doc(Audit.events)
    @operation("listAuditEvents")
    async def events(self, *, after: Optional[int] = None, limit: Optional[int] = None) -> AuditEventList:
        return await self._client._run(ops.audit_events(self._cfg, after, limit))

    @_doc(Audit.head)
    @operation("getAuditHead")
    async def head(self) -> AuditHead:
        return await self._client._run(ops.audit_head(self._cfg))
