"""Exceptions: one class per error code of the contract, all subclasses of :class:`EnterpriseAIError`.

Every error answer of the server carries the same envelope::

    {"error": {"code", "message", "message_i18n": {"en", "fr"}, "details": [...] | null, "request_id"}}

and becomes the exception of its ``code``. ``message`` is in the client's locale (``Accept-Language``);
``message_i18n`` always holds English and French. A code this SDK does not know is
:class:`EnterpriseAIError` itself, keeping the status, the code as sent, the message, the request id and the
whole body (``body``), so a newer server never breaks an older SDK. An answer without any envelope (a load
balancer's HTML page) maps by its HTTP status, else to :class:`EnterpriseAIError`.

Each class carries ``kind``, its name in ``contracts/v1/sdk/behaviour.json`` (``error_kinds``).

============================  =================================  ======
code                          exception                          status
============================  =================================  ======
``unauthorized``              :class:`AuthenticationError`       401
``forbidden``                 :class:`PermissionDeniedError`     403
``tenant_required``           :class:`TenantRequiredError`       403
``not_found``                 :class:`NotFoundError`             404
``method_not_allowed``        :class:`MethodNotAllowedError`     405
``conflict``                  :class:`ConflictError`             409
``idempotency_key_reused``    :class:`IdempotencyKeyReusedError`  409
``idempotency_key_in_flight`` :class:`ConflictError` (retried)   409
``payload_too_large``         :class:`PayloadTooLargeError`      413
``validation_error``          :class:`ValidationError`           422
``rate_limited``              :class:`RateLimitError`            429
``internal``                  :class:`InternalServerError`       500
``unavailable``               :class:`ServiceUnavailableError`   503
``budget_exceeded``           :class:`BudgetExceededError`       402
(transport failure)           :class:`APIConnectionError`        --
(transport timeout)           :class:`APITimeoutError`           --
============================  =================================  ======
"""

from __future__ import annotations

import datetime as _dt
import email.utils
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Mapping, Optional, Tuple, Type

if TYPE_CHECKING:
    import httpx

__all__ = [
    "APIConnectionError",
    "APITimeoutError",
    "AuthenticationError",
    "BudgetExceededError",
    "ConfigurationError",
    "ConflictError",
    "EnterpriseAIError",
    "FieldError",
    "IdempotencyKeyReusedError",
    "InternalServerError",
    "InvalidResponseError",
    "MethodNotAllowedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServiceUnavailableError",
    "TenantRequiredError",
    "ValidationError",
    "error_from_response",
]


@dataclass(frozen=True)
class FieldError:
    """One rejected field of a ``validation_error``.

    ``index`` is the position of the bad record in the list *you* passed (the SDK shifts the server's
    per-batch index when it split your list into batches); ``None`` for a single object or a query parameter.
    ``field`` is dotted for nested fields (``units.tokens_in``, ``cost.amount``).
    """

    field: str
    reason: str
    index: Optional[int] = None

    @classmethod
    def from_json(cls, item: Any) -> FieldError:
        if not isinstance(item, Mapping):
            return cls(field="?", reason=str(item))
        index = item.get("index")
        return cls(
            field=str(item.get("field", "?")),
            reason=str(item.get("reason", "")),
            index=index if isinstance(index, int) and not isinstance(index, bool) else None,
        )

    def __str__(self) -> str:
        where = f"record {self.index}, " if self.index is not None else ""
        return f"{where}field `{self.field}`: {self.reason}"


class EnterpriseAIError(Exception):
    """Base class of every error the SDK raises.

    Attributes:
        code: the contract's error code (``not_found``, ``validation_error``, ...), or ``connection_error``,
            ``timeout``, ``configuration``, ``invalid_response`` for errors raised by the SDK itself.
        message: human-readable text, in the client's locale when the server wrote it.
        message_i18n: the message in every language the server gave (``{"en": ..., "fr": ...}``).
        request_id: the server's request id (``X-Request-Id``) -- quote it to the operator.
        status: the HTTP status, or ``None`` when no answer came.
        details: the rejected fields (``validation_error``), else an empty list.
        headers: the response headers (empty when no answer came).
        retry_after: seconds to wait before retrying, from the ``Retry-After`` header (429, sometimes 503);
            ``None`` when the server did not say.
        partial_result: for a batched ingest that failed part-way, the merged result of the batches that were
            stored before the failing one; else ``None``.
        body: the whole answer body (its JSON, else its text; ``None`` when no answer came).
        kind: the error's kind in the SDKs' one behaviour (``contracts/v1/sdk/behaviour.json``).
    """

    default_code: str = "error"
    kind: ClassVar[str] = "api_error"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        status: Optional[int] = None,
        message_i18n: Optional[Mapping[str, str]] = None,
        request_id: Optional[str] = None,
        details: Optional[List[FieldError]] = None,
        headers: Optional[Mapping[str, str]] = None,
        retry_after: Optional[float] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        self.code: str = code if code is not None else self.default_code
        self.status: Optional[int] = status
        self.message_i18n: Dict[str, str] = dict(message_i18n or {})
        self.request_id: Optional[str] = request_id
        self.details: List[FieldError] = list(details or [])
        self.headers: Dict[str, str] = dict(headers or {})
        self.retry_after: Optional[float] = retry_after
        self.partial_result: Any = None
        self.body: Any = body

    def __str__(self) -> str:
        parts = [f"[{self.code}] {self.message}"]
        extra = []
        if self.status is not None:
            extra.append(f"status {self.status}")
        if self.request_id:
            extra.append(f"request_id {self.request_id}")
        if extra:
            parts.append(f"({', '.join(extra)})")
        return " ".join(parts)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status!r}, "
            f"message={self.message!r}, request_id={self.request_id!r})"
        )

    def _copy_with_details(self, details: List[FieldError]) -> EnterpriseAIError:
        """The same error with other ``details`` (used to shift batch indexes)."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.details = list(details)
        clone.args = self.args
        return clone


class ConfigurationError(EnterpriseAIError, ValueError):
    """The client is misconfigured (no API key, no base URL, ...). Raised before any request."""

    default_code = "configuration"
    kind = "configuration"


class APIConnectionError(EnterpriseAIError):
    """No answer: the connection failed or broke (after the retries)."""

    default_code = "connection_error"
    kind = "connection"


class APITimeoutError(APIConnectionError):
    """No answer within the client's timeout (after the retries)."""

    default_code = "timeout"
    kind = "timeout"


class InvalidResponseError(EnterpriseAIError):
    """The server answered something that is not the contract's JSON."""

    default_code = "invalid_response"
    kind = "invalid_response"


class AuthenticationError(EnterpriseAIError):
    """401 ``unauthorized``: missing, unknown, expired or revoked API key."""

    default_code = "unauthorized"
    kind = "authentication"


class PermissionDeniedError(EnterpriseAIError):
    """403 ``forbidden``: the key's role may not do this, or a tenant key named another tenant."""

    default_code = "forbidden"
    kind = "permission_denied"


class TenantRequiredError(PermissionDeniedError):
    """403 ``tenant_required``: a tenant-bound role without a tenant."""

    default_code = "tenant_required"
    kind = "tenant_required"


class NotFoundError(EnterpriseAIError):
    """404 ``not_found``: unknown path, tenant, policy or key."""

    default_code = "not_found"
    kind = "not_found"


class MethodNotAllowedError(EnterpriseAIError):
    """405 ``method_not_allowed``."""

    default_code = "method_not_allowed"
    kind = "method_not_allowed"


class ConflictError(EnterpriseAIError):
    """409 ``conflict``: the request contradicts the stored state (duplicate slug, revoked key, ...)."""

    default_code = "conflict"
    kind = "conflict"


class IdempotencyKeyReusedError(ConflictError):
    """409 ``idempotency_key_reused``: an ``Idempotency-Key`` already used with another body."""

    default_code = "idempotency_key_reused"
    kind = "idempotency_key_reused"


class PayloadTooLargeError(EnterpriseAIError):
    """413 ``payload_too_large``: too many records or bytes in one request (nothing of it was stored)."""

    default_code = "payload_too_large"
    kind = "payload_too_large"


class ValidationError(EnterpriseAIError):
    """422 ``validation_error``: ``details`` names every rejected field (with ``index`` for batches)."""

    default_code = "validation_error"
    kind = "validation"

    @property
    def fields(self) -> List[str]:
        """The names of the rejected fields, in order, without repeats."""
        seen: List[str] = []
        for d in self.details:
            if d.field not in seen:
                seen.append(d.field)
        return seen

    @property
    def indexes(self) -> List[int]:
        """The positions (in the list you passed) of the rejected records, in order, without repeats."""
        seen: List[int] = []
        for d in self.details:
            if d.index is not None and d.index not in seen:
                seen.append(d.index)
        return seen

    def errors_for(self, field: str) -> List[FieldError]:
        """The details about one field."""
        return [d for d in self.details if d.field == field]


class RateLimitError(EnterpriseAIError):
    """429 ``rate_limited``: ``retry_after`` says how many seconds to wait (from ``Retry-After``)."""

    default_code = "rate_limited"
    kind = "rate_limit"


class InternalServerError(EnterpriseAIError):
    """500 ``internal``: the server failed (its logs hold the cause under ``request_id``)."""

    default_code = "internal"
    kind = "internal_server"


class ServiceUnavailableError(EnterpriseAIError):
    """503 ``unavailable``: the server cannot serve now (storage unreachable, ...)."""

    default_code = "unavailable"
    kind = "service_unavailable"


class BudgetExceededError(EnterpriseAIError):
    """402 ``budget_exceeded``: a reservation would pass an enforcing budget; nothing was held. The message
    names the budget, its limit and what is left; ``details`` names ``estimate.cost`` or
    ``estimate.tokens``."""

    default_code = "budget_exceeded"
    kind = "budget_exceeded"


_BY_CODE: Dict[str, Type[EnterpriseAIError]] = {
    "unauthorized": AuthenticationError,
    "forbidden": PermissionDeniedError,
    "tenant_required": TenantRequiredError,
    "not_found": NotFoundError,
    "method_not_allowed": MethodNotAllowedError,
    "payload_too_large": PayloadTooLargeError,
    "conflict": ConflictError,
    "idempotency_key_reused": IdempotencyKeyReusedError,
    "idempotency_key_in_flight": ConflictError,
    "validation_error": ValidationError,
    "rate_limited": RateLimitError,
    "internal": InternalServerError,
    "unavailable": ServiceUnavailableError,
    "budget_exceeded": BudgetExceededError,
}

_BY_STATUS: Dict[int, Type[EnterpriseAIError]] = {
    401: AuthenticationError,
    402: BudgetExceededError,
    403: PermissionDeniedError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
    500: InternalServerError,
    503: ServiceUnavailableError,
}


def parse_retry_after(value: Optional[str], now: Optional[_dt.datetime] = None) -> Optional[float]:
    """``Retry-After`` as seconds: an integer (or decimal) count, or an HTTP date. ``None`` when absent or
    unreadable."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=_dt.timezone.utc)
        current = now or _dt.datetime.now(_dt.timezone.utc)
        return max(0.0, (when - current).total_seconds())
    if seconds != seconds or seconds < 0:  # NaN or negative
        return None
    return seconds


def _envelope(
    body: Any,
) -> Tuple[Optional[str], Optional[str], Dict[str, str], List[FieldError], Optional[str]]:
    """(code, message, message_i18n, details, request_id) of an error body; Nones when it is no envelope."""
    if not isinstance(body, Mapping):
        return None, None, {}, [], None
    err = body.get("error")
    if not isinstance(err, Mapping):
        return None, None, {}, [], None
    code = err.get("code")
    message = err.get("message")
    i18n_raw = err.get("message_i18n")
    i18n = {str(k): str(v) for k, v in i18n_raw.items()} if isinstance(i18n_raw, Mapping) else {}
    details_raw = err.get("details")
    details = [FieldError.from_json(d) for d in details_raw] if isinstance(details_raw, list) else []
    request_id = err.get("request_id")
    return (
        code if isinstance(code, str) else None,
        message if isinstance(message, str) else None,
        i18n,
        details,
        request_id if isinstance(request_id, str) else None,
    )


def error_class(code: Optional[str], status: int) -> Type[EnterpriseAIError]:
    """The exception class of an error answer: by code; a code this SDK does not know is the base class;
    an answer without a code (no envelope) maps by status, else to the base class."""
    if code is not None:
        return _BY_CODE.get(code, EnterpriseAIError)
    return _BY_STATUS.get(status, EnterpriseAIError)


def error_from_response(response: httpx.Response) -> EnterpriseAIError:
    """The exception of an error answer (any status >= 400), envelope or not."""
    from ._json import decode

    status = response.status_code
    try:
        body: Any = decode(response.content) if response.content else None
    except ValueError:
        body = response.text if response.content else None
    code, message, i18n, details, request_id = _envelope(body)
    if request_id is None:
        request_id = response.headers.get("x-request-id")
    cls = error_class(code, status)
    if message is None:
        text = response.text.strip() if response.content else ""
        reason = response.reason_phrase or "error"
        message = f"HTTP {status} {reason}" + (f": {text[:500]}" if text else "")
    if code is None:
        code = cls.default_code if cls is not EnterpriseAIError else f"http_{status}"
    headers = dict(response.headers.items())
    return cls(
        message,
        code=code,
        status=status,
        message_i18n=i18n,
        request_id=request_id,
        details=details,
        headers=headers,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
        body=body,
    )
