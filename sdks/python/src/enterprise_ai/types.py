"""Typed results (frozen dataclasses) and typed inputs (``TypedDict``) of the API.

The models are generated from ``contracts/v1/openapi.json`` (:mod:`enterprise_ai._models`, by
``sdks/python/codegen/generate.py``); this module names them for users and adds the ingest results, which the
SDK sums over the batches of a call.

Money and every quantity are :class:`~decimal.Decimal`, never ``float``: the server writes exact decimals
(money as strings such as ``"412.70"``, quantities as exact JSON numbers) and the SDK reads them digit for
digit. Instants are timezone-aware :class:`~datetime.datetime` (UTC).

Every result keeps the JSON object it was read from in ``.raw`` (excluded from ``repr`` and equality): fields
a newer server adds are there before the SDK knows them, and unknown fields never break parsing. Every answer
has ``request_id`` (the answer's ``X-Request-Id``), kept out of equality and of ``dataclasses.asdict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

from ._model_runtime import ItemList, Result
from ._models import (
    Allocation,
    AllocationDaily,
    AllocationDeployment,
    AllocationExplanation,
    AllocationFinding,
    AllocationGap,
    AllocationItem,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreate,
    AllocationPolicyCreated,
    AllocationPolicyDisable,
    AllocationPolicyList,
    AllocationPolicySupersede,
    AllocationSeries,
    AllocationTenant,
    Anomaly,
    AnomalyList,
    ApiKey,
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ApiKeyRotate,
    AuditEvent,
    AuditEventList,
    AuditHead,
    Budget,
    BudgetChange,
    BudgetCreate,
    BudgetCurrent,
    BudgetDisable,
    BudgetForecast,
    BudgetList,
    BudgetSupersede,
    Catalog,
    ExplanationBucket,
    ExplanationClaim,
    ExplanationIdleShare,
    ExplanationIdleSpread,
    ExplanationParty,
    ExplanationPartyCost,
    ExplanationPolicy,
    ExplanationPriced,
    ExplanationRounding,
    ExplanationRoundingLine,
    Forecast,
    ForecastLine,
    ForecastTotal,
    GpuSample,
    GpuSampleBatch,
    GpuSampleIngestResult,
    GpuUsageBreakdown,
    GpuUsageRow,
    Health,
    IdleGpu,
    Money,
    MoneyInput,
    Provider,
    ProviderCreate,
    ProviderPricing,
    Ready,
    Recommendation,
    RecommendationEvidence,
    RecommendationList,
    RecommendationThresholds,
    Reservation,
    ReservationAmounts,
    ReservationCommit,
    ReservationCommitActualInput,
    ReservationCreate,
    ReservationCreateEstimateInput,
    SacctDocument,
    SacctDocumentJobsInput,
    SeriesDeployment,
    SeriesStep,
    SeriesTotal,
    SlurmJobLine,
    SlurmReconciliation,
    Statement,
    StatementIssue,
    StatementIssued,
    StatementLine,
    StatementList,
    StatementSummary,
    Tenant,
    TenantCreate,
    TenantList,
    TenantRef,
    TokenCost,
    TokenCostList,
    UsageEvent,
    UsageEventBatch,
    UsageEventCostInput,
    UsageEventIngestResult,
    UsageEventModelInput,
    WhoAmI,
)

__all__ = [
    "Allocation",
    "AllocationDaily",
    "AllocationDeployment",
    "AllocationExplanation",
    "AllocationFinding",
    "AllocationGap",
    "AllocationItem",
    "AllocationPolicy",
    "AllocationPolicyChange",
    "AllocationPolicyCreate",
    "AllocationPolicyCreated",
    "AllocationPolicyDisable",
    "AllocationPolicyList",
    "AllocationPolicySupersede",
    "AllocationSeries",
    "AllocationTenant",
    "Anomaly",
    "AnomalyList",
    "ApiKey",
    "ApiKeyCreate",
    "ApiKeyCreated",
    "ApiKeyList",
    "ApiKeyRotate",
    "AuditEvent",
    "AuditEventList",
    "AuditHead",
    "Budget",
    "BudgetChange",
    "BudgetCreate",
    "BudgetCurrent",
    "BudgetDisable",
    "BudgetForecast",
    "BudgetList",
    "BudgetSupersede",
    "Catalog",
    "ExplanationBucket",
    "ExplanationClaim",
    "ExplanationIdleShare",
    "ExplanationIdleSpread",
    "ExplanationParty",
    "ExplanationPartyCost",
    "ExplanationPolicy",
    "ExplanationPriced",
    "ExplanationRounding",
    "ExplanationRoundingLine",
    "Forecast",
    "ForecastLine",
    "ForecastTotal",
    "GpuSample",
    "GpuSampleBatch",
    "GpuSampleIngestResult",
    "GpuUsageBreakdown",
    "GpuUsageRow",
    "Health",
    "IdleGpu",
    "IngestResult",
    "ItemList",
    "Money",
    "MoneyInput",
    "Provider",
    "ProviderCreate",
    "ProviderPricing",
    "Ready",
    "Recommendation",
    "RecommendationEvidence",
    "RecommendationList",
    "RecommendationThresholds",
    "Reservation",
    "ReservationAmounts",
    "ReservationCommit",
    "ReservationCommitActualInput",
    "ReservationCreate",
    "ReservationCreateEstimateInput",
    "SacctDocument",
    "SacctDocumentJobsInput",
    "SampleIngestResult",
    "SeriesDeployment",
    "SeriesStep",
    "SeriesTotal",
    "SlurmJobLine",
    "SlurmReconciliation",
    "Statement",
    "StatementIssue",
    "StatementIssued",
    "StatementLine",
    "StatementList",
    "StatementSummary",
    "Tenant",
    "TenantCreate",
    "TenantList",
    "TenantRef",
    "TokenCost",
    "TokenCostList",
    "UsageEvent",
    "UsageEventBatch",
    "UsageEventCostInput",
    "UsageEventIngestResult",
    "UsageEventModelInput",
    "UsageIngestResult",
    "WhoAmI",
]


@dataclass(frozen=True)
class IngestResult(Result):
    """What the server counted for an ingest call, summed over every request the SDK made.

    ``accepted`` is the server's count (summed over batches); ``requests`` the number of successful HTTP
    requests the records went in (batches, after any split on 413). ``raw`` holds every integer counter of the
    server's answers summed, so that counters added by a newer server are summed too.
    """

    accepted: int
    requests: int
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class SampleIngestResult(IngestResult):
    """Result of :meth:`~enterprise_ai.resources.Finops.gpu_samples`.

    ``accepted``: samples of the batches, re-sent duplicates included; ``duplicates``: of those, samples the
    server already held (same ``gpu_uuid`` and ``timestamp``), counted once.
    """

    duplicates: int = 0

    @property
    def new(self) -> int:
        """Samples stored for the first time (``accepted - duplicates``)."""
        return self.accepted - self.duplicates


@dataclass(frozen=True)
class UsageIngestResult(IngestResult):
    """Result of :meth:`~enterprise_ai.resources.Usage.events`: ``accepted`` events (a re-sent
    ``event_id`` replaces the stored event) and the ``event_ids`` sent, in the order of your list (ids the SDK
    generated included)."""

    event_ids: List[str] = field(default_factory=list, repr=False)
