"""Official Python SDK of eai-gpu, the on-prem GPU accounting and chargeback service.

::

    from enterprise_ai import EnterpriseAI

    client = EnterpriseAI(base_url="https://eai-gpu.internal", api_key="eai_live_...", tenant="acme")
    client.finops.gpu_samples(samples=samples)
    allocation = client.finops.gpu_allocation(start="2026-10-01", end="2026-10-31")
    for item in allocation.items:
        print(item.tenant_id, item.deployment_id, item.allocated)  # Money(amount=Decimal('412.70'), ...)

See :class:`EnterpriseAI` / :class:`AsyncEnterpriseAI`, the results in :mod:`enterprise_ai.types`, the
exceptions in :mod:`enterprise_ai.errors` and the worker-side :class:`enterprise_ai.usage.Emitter`.
"""

from ._client import AsyncEnterpriseAI, EnterpriseAI
from ._core import DEFAULT_MAX_BATCH_SIZE, RetryPolicy
from ._version import __version__
from .errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    EnterpriseAIError,
    FieldError,
    InternalServerError,
    InvalidResponseError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    TenantRequiredError,
    ValidationError,
)
from .types import (
    Allocation,
    AllocationDaily,
    AllocationDeployment,
    AllocationFinding,
    AllocationGap,
    AllocationItem,
    AllocationPolicy,
    AllocationPolicyChange,
    AllocationPolicyCreated,
    AllocationPolicyList,
    AllocationTenant,
    ApiKey,
    ApiKeyCreated,
    ApiKeyList,
    AuditEvent,
    AuditEventList,
    AuditHead,
    Catalog,
    GpuSample,
    IngestResult,
    Money,
    Provider,
    SampleIngestResult,
    Tenant,
    TenantList,
    TenantRef,
    UsageEvent,
    UsageIngestResult,
    WhoAmI,
)

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE",
    "APIConnectionError",
    "APITimeoutError",
    "Allocation",
    "AllocationDaily",
    "AllocationDeployment",
    "AllocationFinding",
    "AllocationGap",
    "AllocationItem",
    "AllocationPolicy",
    "AllocationPolicyChange",
    "AllocationPolicyCreated",
    "AllocationPolicyList",
    "AllocationTenant",
    "ApiKey",
    "ApiKeyCreated",
    "ApiKeyList",
    "AsyncEnterpriseAI",
    "AuditEvent",
    "AuditEventList",
    "AuditHead",
    "AuthenticationError",
    "Catalog",
    "ConfigurationError",
    "ConflictError",
    "EnterpriseAI",
    "EnterpriseAIError",
    "FieldError",
    "GpuSample",
    "IngestResult",
    "InternalServerError",
    "InvalidResponseError",
    "MethodNotAllowedError",
    "Money",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Provider",
    "RateLimitError",
    "RetryPolicy",
    "SampleIngestResult",
    "ServiceUnavailableError",
    "Tenant",
    "TenantList",
    "TenantRef",
    "TenantRequiredError",
    "UsageEvent",
    "UsageIngestResult",
    "ValidationError",
    "WhoAmI",
    "__version__",
]
