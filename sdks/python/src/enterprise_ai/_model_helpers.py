"""Hand-written methods of the generated models (:mod:`enterprise_ai._models`): the generator gives the
model ``X`` the mixin ``XHelpers`` of this module when there is one. Methods only, never fields: the fields
come from the contract (declared here for the type checker only)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, List, Optional, Union

if TYPE_CHECKING:
    from ._models import (
        AllocationDeployment,
        AllocationItem,
        AllocationPolicy,
        AllocationTenant,
        ApiKey,
        AuditEvent,
        Budget,
        ExplanationRounding,
        GpuUsageRow,
        Money,
        Provider,
        SeriesDeployment,
        SeriesTotal,
        SlurmJobLine,
        Tenant,
        TokenCost,
    )


def _money(amount: Decimal, currency: str) -> Money:
    from ._models import Money

    return Money(amount=amount, currency=currency)


def _total(totals: List[SeriesTotal], currency: Optional[str]) -> Optional[SeriesTotal]:
    return next((t for t in totals if currency is None or t.currency == currency), None)


class MoneyHelpers:
    """Methods of :class:`~enterprise_ai.Money`."""

    __slots__ = ()

    if TYPE_CHECKING:
        amount: Decimal
        currency: str

    def __str__(self) -> str:
        return f"{self.amount} {self.currency}"


class AllocationDeploymentHelpers:
    """Methods of :class:`~enterprise_ai.AllocationDeployment`."""

    __slots__ = ()

    if TYPE_CHECKING:
        cost: Decimal
        currency: Optional[str]

    @property
    def cost_money(self) -> Optional[Money]:
        """``cost`` with its currency (``None`` when nothing of the deployment was priced)."""
        return None if self.currency is None else _money(self.cost, self.currency)


class AllocationHelpers:
    """Methods of :class:`~enterprise_ai.Allocation`."""

    __slots__ = ()

    if TYPE_CHECKING:
        deployments: List[AllocationDeployment]
        items: List[AllocationItem]
        tenants: List[AllocationTenant]

    def deployment(
        self, deployment_id: str, currency: Optional[str] = None
    ) -> Optional[AllocationDeployment]:
        """The row of a deployment (in ``currency`` when given), or ``None``."""
        for row in self.deployments:
            if row.deployment_id == deployment_id and (currency is None or row.currency == currency):
                return row
        return None

    def tenant(self, tenant_id: str, currency: Optional[str] = None) -> Optional[AllocationTenant]:
        """The row of a tenant (in ``currency`` when given), or ``None``."""
        for row in self.tenants:
            if row.tenant_id == tenant_id and (currency is None or row.cost.currency == currency):
                return row
        return None

    def items_for(
        self, *, tenant_id: Optional[str] = None, deployment_id: Optional[str] = None
    ) -> List[AllocationItem]:
        """The items of a tenant and/or a deployment."""
        return [
            i
            for i in self.items
            if (tenant_id is None or i.tenant_id == tenant_id)
            and (deployment_id is None or i.deployment_id == deployment_id)
        ]

    @property
    def tenant_ids(self) -> List[str]:
        """The tenants of the view (from its tenant rows and items), in order of first appearance."""
        seen: List[str] = []
        for t in [r.tenant_id for r in self.tenants] + [i.tenant_id for i in self.items]:
            if t not in seen:
                seen.append(t)
        return seen


class TokenCostHelpers:
    """Methods of :class:`~enterprise_ai.TokenCost`."""

    __slots__ = ()

    if TYPE_CHECKING:
        cost: Decimal
        currency: str

    @property
    def cost_money(self) -> Money:
        """``cost`` with its currency."""
        return _money(self.cost, self.currency)


class TokenCostListHelpers:
    """Methods of :class:`~enterprise_ai.TokenCostList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[TokenCost]

    def deployment(self, deployment_id: str) -> Optional[TokenCost]:
        """The first row of a deployment (``aggregate="deployment"``), or ``None``."""
        return next((r for r in self.items if r.deployment_id == deployment_id), None)

    def tenant(self, tenant_id: str) -> Optional[TokenCost]:
        """The first row of a tenant (``aggregate="tenant"``), or ``None``."""
        return next((r for r in self.items if r.tenant_id == tenant_id), None)

    def model(self, model: str) -> Optional[TokenCost]:
        """The first row of a model (``aggregate="model"``), or ``None``."""
        return next((r for r in self.items if r.model == model), None)


class SeriesStepHelpers:
    """Methods of :class:`~enterprise_ai.SeriesStep`."""

    __slots__ = ()

    if TYPE_CHECKING:
        deployments: List[SeriesDeployment]
        totals: List[SeriesTotal]

    def total(self, currency: Optional[str] = None) -> Optional[SeriesTotal]:
        """The step's total in ``currency`` (the first one when not given), or ``None``."""
        return _total(self.totals, currency)

    def deployment(self, deployment_id: str, currency: Optional[str] = None) -> Optional[SeriesDeployment]:
        """The step's row of a deployment (in ``currency`` when given), or ``None``."""
        for row in self.deployments:
            if row.deployment_id == deployment_id and (currency is None or row.currency == currency):
                return row
        return None


class AllocationSeriesHelpers:
    """Methods of :class:`~enterprise_ai.AllocationSeries`."""

    __slots__ = ()

    if TYPE_CHECKING:
        totals: List[SeriesTotal]

    def total(self, currency: Optional[str] = None) -> Optional[SeriesTotal]:
        """The period's total in ``currency`` (the first one when not given), or ``None``."""
        return _total(self.totals, currency)


class AllocationExplanationHelpers:
    """Methods of :class:`~enterprise_ai.AllocationExplanation`."""

    __slots__ = ()

    if TYPE_CHECKING:
        rounding: List[ExplanationRounding]

    def amount(self, tenant_id: str, currency: Optional[str] = None) -> Decimal:
        """What ``tenant_id`` is charged on the deployment (in ``currency``, or every currency's sum)."""
        return sum(
            (
                line.amount
                for r in self.rounding
                if currency is None or r.currency == currency
                for line in r.lines
                if line.party.tenant_id == tenant_id
            ),
            Decimal(0),
        )


class GpuUsageRowHelpers:
    """Methods of :class:`~enterprise_ai.GpuUsageRow`."""

    __slots__ = ()

    if TYPE_CHECKING:
        cost: List[Money]

    def amount(self, currency: str) -> Decimal:
        """The row's cost in ``currency`` (``0`` when it has none in it)."""
        return sum((m.amount for m in self.cost if m.currency == currency), Decimal(0))


class GpuUsageBreakdownHelpers:
    """Methods of :class:`~enterprise_ai.GpuUsageBreakdown`."""

    __slots__ = ()

    if TYPE_CHECKING:
        rows: List[GpuUsageRow]

    def total(self, currency: str) -> Decimal:
        """The rows' cost in ``currency``, summed (``0`` when none is in it)."""
        return sum((r.amount(currency) for r in self.rows), Decimal(0))


class SlurmJobLineHelpers:
    """Methods of :class:`~enterprise_ai.SlurmJobLine`."""

    __slots__ = ()

    if TYPE_CHECKING:
        cost: List[Money]

    def amount(self, currency: str) -> Decimal:
        """The job's cost in ``currency`` (``0`` when it has none in it)."""
        return sum((m.amount for m in self.cost if m.currency == currency), Decimal(0))


class SlurmReconciliationHelpers:
    """Methods of :class:`~enterprise_ai.SlurmReconciliation`."""

    __slots__ = ()

    if TYPE_CHECKING:
        idle_cost: List[Money]
        jobs: List[SlurmJobLine]

    def job(self, job_id: Union[str, int]) -> Optional[SlurmJobLine]:
        """The line of a job (``"42"`` or ``42``), or ``None``."""
        return next((j for j in self.jobs if j.job_id == str(job_id)), None)

    def with_status(self, status: str) -> List[SlurmJobLine]:
        """The jobs of one ``status`` (``"ok"``, ``"idle"``, ``"not_measured"``, ``"not_in_slurm"``)."""
        return [j for j in self.jobs if j.status == status]

    def idle_amount(self, currency: str) -> Decimal:
        """``idle_cost`` in ``currency`` (``0`` when none is in it)."""
        return sum((m.amount for m in self.idle_cost if m.currency == currency), Decimal(0))


class AllocationPolicyListHelpers:
    """Methods of :class:`~enterprise_ai.AllocationPolicyList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[AllocationPolicy]

    def get(self, policy_id: str) -> Optional[AllocationPolicy]:
        """The policy with this id, or ``None``."""
        return next((p for p in self.items if p.id == policy_id), None)


class BudgetListHelpers:
    """Methods of :class:`~enterprise_ai.BudgetList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[Budget]

    def get(self, budget_id: str) -> Optional[Budget]:
        """The budget with this id, or ``None``."""
        return next((b for b in self.items if b.id == budget_id), None)


class ReservationAmountsHelpers:
    """Methods of :class:`~enterprise_ai.ReservationAmounts`."""

    __slots__ = ()

    if TYPE_CHECKING:
        cost: Decimal
        currency: str

    @property
    def money(self) -> Money:
        """The cost as :class:`Money`."""
        return _money(self.cost, self.currency)


class CatalogHelpers:
    """Methods of :class:`~enterprise_ai.Catalog`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[Provider]

    @property
    def providers(self) -> List[Provider]:
        """The providers (same as ``items``)."""
        return self.items

    def deployment(self, deployment_id: str) -> Optional[Provider]:
        """The provider of a deployment, or ``None``."""
        return next((p for p in self.items if p.deployment_id == deployment_id), None)


class TenantListHelpers:
    """Methods of :class:`~enterprise_ai.TenantList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[Tenant]

    def get(self, key: str) -> Optional[Tenant]:
        """The tenant with this slug or id, or ``None``."""
        return next((t for t in self.items if key in (t.slug, t.id)), None)


class ApiKeyListHelpers:
    """Methods of :class:`~enterprise_ai.ApiKeyList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[ApiKey]

    def get(self, key_id: str) -> Optional[ApiKey]:
        """The key with this id, or ``None``."""
        return next((k for k in self.items if k.id == key_id), None)


class AuditEventListHelpers:
    """Methods of :class:`~enterprise_ai.AuditEventList`."""

    __slots__ = ()

    if TYPE_CHECKING:
        items: List[AuditEvent]

    @property
    def last_seq(self) -> Optional[int]:
        """The ``seq`` of the last event of the page (``None`` when empty): the next page's ``after``."""
        return self.items[-1].seq if self.items else None
