"""The SDK's logic, written once for the sync and the async client (sans-I/O).

Every API call is a generator (an *operation*) that yields actions -- :class:`Send` an HTTP request or
:class:`Sleep` a while -- and receives the outcome of each ``Send`` (an ``httpx.Response`` or the transport
exception). Request building, response parsing, the retry policy, payload preparation (timestamps, event ids)
and batching (chunks, split on 413, merged counts) live here; the sync and async clients only carry the
actions out (:func:`run_sync` / :func:`run_async`), so both behave identically by construction.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from dataclasses import dataclass, field
from typing import (
    Any,
    Callable,
    Dict,
    Generator,
    Iterable,
    List,
    Mapping,
    Optional,
    TypeVar,
    Union,
)
from urllib.parse import quote

import httpx

from ._json import decode, encode, to_wire, utc_now_rfc3339
from ._version import __version__
from .errors import (
    APIConnectionError,
    APITimeoutError,
    EnterpriseAIError,
    FieldError,
    InvalidResponseError,
    PayloadTooLargeError,
    error_from_response,
)

__all__ = [
    "DEFAULT_MAX_BATCH_SIZE",
    "ClientConfig",
    "Op",
    "RawJson",
    "RetryPolicy",
    "Send",
    "Sleep",
    "call",
    "ingest",
    "prepare_events",
    "prepare_samples",
    "run_async",
    "run_sync",
]

logger = logging.getLogger("enterprise_ai")

T = TypeVar("T")

#: Records per request by default: half the server's default ``EAI_MAX_BATCH`` (10,000).
DEFAULT_MAX_BATCH_SIZE = 5000

USER_AGENT = f"enterprise-ai-python/{__version__}"


# ------------------------------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Send:
    """Send one HTTP request; the operation receives an ``httpx.Response`` or the transport exception."""

    method: str
    path: str
    params: Optional[Dict[str, str]] = None
    body: Optional[bytes] = None
    accept: Optional[str] = None


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` (between attempts); the operation receives ``None``."""

    seconds: float


Action = Union[Send, Sleep]
Outcome = Union[httpx.Response, BaseException, None]
#: An operation: yields actions, receives outcomes, returns the call's result.
Op = Generator[Action, Outcome, T]


# ------------------------------------------------------------------------------------------ configuration


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before another attempt.

    Retried: connection failures and timeouts, ``429 rate_limited`` and ``5xx`` -- at most ``max_retries``
    more attempts, waiting ``Retry-After`` when the server sent one (capped at ``max_retry_after``), else an
    exponential backoff with full jitter: ``uniform(0, min(max_delay, base_delay * 2**attempt))``. Other
    ``4xx`` are never retried.

    A request that is not idempotent (creating a policy, a tenant or a key, superseding, disabling,
    rotating) is retried only when the server surely did not act on it: the connection could not be opened,
    ``429`` or ``503``. Ingests are idempotent: samples by ``(gpu_uuid, timestamp)``, events by ``event_id``,
    both set once by the SDK before the first attempt.
    """

    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must be >= 0")

    def delay(self, attempt: int, retry_after: Optional[float]) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0 for the first)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        cap = min(self.max_delay, self.base_delay * (2 ** min(attempt, 30)))
        return random.uniform(0.0, cap)

    @staticmethod
    def retries_status(status: int, idempotent: bool) -> bool:
        """Whether an error answer may be retried."""
        if status in (429, 503):
            return True
        return status >= 500 and idempotent

    @staticmethod
    def retries_transport(exc: BaseException, idempotent: bool) -> bool:
        """Whether a transport failure may be retried."""
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)):
            return True  # the request never reached the server
        if isinstance(exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)):
            return idempotent
        return False


@dataclass(frozen=True)
class ClientConfig:
    """Everything a request needs; immutable, shared by a client and its resources."""

    base_url: str
    api_key: str = field(repr=False)
    tenant: Optional[str] = None
    locale: str = "en"
    timeout: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    split_on_payload_too_large: bool = True
    default_headers: Mapping[str, str] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return self.base_url + path

    def headers(self, has_body: bool, accept: Optional[str] = None) -> Dict[str, str]:
        h: Dict[str, str] = {"Accept": accept or "application/json", "User-Agent": USER_AGENT}
        h.update(self.default_headers)
        h["Authorization"] = f"Bearer {self.api_key}"
        h["Accept-Language"] = self.locale
        if self.tenant:
            h["X-EAI-Tenant"] = self.tenant
        if has_body:
            h["Content-Type"] = "application/json"
        return h


def path_segment(value: str) -> str:
    """A value as one URL path segment."""
    if not isinstance(value, str) or not value:
        raise ValueError("an id must be a non-empty string")
    return quote(value, safe="")


# ----------------------------------------------------------------------------------------------- one call


class _NoBody:
    pass


NO_BODY: Any = _NoBody()


@dataclass(frozen=True)
class RawJson:
    """A request body that is JSON text already (a document read from a file or a command's output): sent
    as its bytes, never parsed and re-encoded by the SDK."""

    content: bytes


def _transport_error(exc: BaseException, method: str, path: str) -> APIConnectionError:
    if isinstance(exc, httpx.TimeoutException):
        return APITimeoutError(f"{method} {path}: no answer within the timeout ({type(exc).__name__}: {exc})")
    return APIConnectionError(f"{method} {path}: connection failed ({type(exc).__name__}: {exc})")


def call(
    cfg: ClientConfig,
    method: str,
    path: str,
    parse: Callable[[Any], T],
    *,
    params: Optional[Mapping[str, Optional[str]]] = None,
    body: Any = NO_BODY,
    idempotent: bool,
    accept: Optional[str] = None,
    binary: bool = False,
) -> Op[T]:
    """One API call with its retries: sends, retries per :class:`RetryPolicy`, raises the error of the final
    failure, or returns ``parse(json)`` of the answer (``parse(bytes)`` of its body when ``binary``: a file
    such as a FOCUS export; errors still come as the JSON envelope)."""
    if body is NO_BODY:
        content: Optional[bytes] = None
    elif isinstance(body, RawJson):
        content = body.content
    else:
        content = encode(body)
    query = {k: v for k, v in (params or {}).items() if v is not None} or None
    policy = cfg.retry
    attempt = 0
    while True:
        outcome = yield Send(method, path, query, content, accept)
        if isinstance(outcome, BaseException):
            error: EnterpriseAIError = _transport_error(outcome, method, path)
            retry = policy.retries_transport(outcome, idempotent)
            retry_after: Optional[float] = None
            if not (retry and attempt < policy.max_retries):
                raise error from outcome
        elif isinstance(outcome, httpx.Response):
            if outcome.status_code < 300:
                if binary:
                    return parse(outcome.content)
                return _parse_answer(outcome, parse, method, path)
            error = error_from_response(outcome)
            retry = policy.retries_status(outcome.status_code, idempotent)
            retry_after = error.retry_after
            if not (retry and attempt < policy.max_retries):
                raise error
        else:  # pragma: no cover - a driver bug
            raise TypeError(f"unexpected outcome {outcome!r}")
        wait = policy.delay(attempt, retry_after)
        attempt += 1
        logger.warning(
            "enterprise_ai: %s %s failed (%s); retry %d of %d in %.2f s",
            method,
            path,
            error,
            attempt,
            policy.max_retries,
            wait,
        )
        yield Sleep(wait)


def _parse_answer(response: httpx.Response, parse: Callable[[Any], T], method: str, path: str) -> T:
    request_id = response.headers.get("x-request-id")
    try:
        data = decode(response.content) if response.content else None
    except ValueError as exc:
        raise InvalidResponseError(
            f"{method} {path}: the answer is not JSON ({exc})",
            status=response.status_code,
            request_id=request_id,
        ) from exc
    try:
        return parse(data)
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        raise InvalidResponseError(
            f"{method} {path}: the answer does not match the contract ({type(exc).__name__}: {exc})",
            status=response.status_code,
            request_id=request_id,
        ) from exc


def as_object(data: Any) -> Mapping[str, Any]:
    """The answer as a JSON object (or a TypeError, reported as an invalid answer)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    return data


# ------------------------------------------------------------------------------------------------ ingests


def prepare_samples(samples: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Copies the samples into wire form, stamping those without ``timestamp`` with the current instant
    (RFC 3339 UTC, milliseconds) -- once, before any attempt. The caller's objects are never modified."""
    if isinstance(samples, Mapping):
        raise TypeError("samples must be a list of samples, not one sample")
    stamp: Optional[str] = None
    out: List[Dict[str, Any]] = []
    for i, sample in enumerate(samples):
        if not isinstance(sample, Mapping):
            raise TypeError(f"samples[{i}] must be a mapping, not {type(sample).__name__}")
        record: Dict[str, Any] = to_wire(sample)
        if record.get("timestamp") is None:
            if stamp is None:
                stamp = utc_now_rfc3339()
            record["timestamp"] = stamp
        out.append(record)
    return out


def prepare_event(event: Mapping[str, Any], now: Optional[str] = None) -> Dict[str, Any]:
    """One usage event in wire form, with ``event_id`` (uuid4), ``schema_version`` (``"1.0"``) and
    ``occurred_at`` (now) filled in when absent. The caller's object is never modified."""
    if not isinstance(event, Mapping):
        raise TypeError(f"an event must be a mapping, not {type(event).__name__}")
    record: Dict[str, Any] = to_wire(event)
    if record.get("event_id") is None:
        record["event_id"] = str(uuid.uuid4())
    if record.get("schema_version") is None:
        record["schema_version"] = "1.0"
    if record.get("occurred_at") is None:
        record["occurred_at"] = now or utc_now_rfc3339()
    return record


def prepare_events(events: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """:func:`prepare_event` of every event (one ``now`` for all)."""
    if isinstance(events, Mapping):
        raise TypeError("events must be a list of events, not one event")
    now = utc_now_rfc3339()
    out = []
    for i, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise TypeError(f"events[{i}] must be a mapping, not {type(event).__name__}")
        out.append(prepare_event(event, now))
    return out


def _merge_counts(totals: Dict[str, Any], answer: Mapping[str, Any]) -> None:
    for key, value in answer.items():
        if isinstance(value, int) and not isinstance(value, bool):
            previous = totals.get(key, 0)
            totals[key] = (previous if isinstance(previous, int) else 0) + value
        elif key not in totals:
            totals[key] = value


def ingest(
    cfg: ClientConfig,
    path: str,
    key: str,
    records: List[Dict[str, Any]],
    finish: Callable[[Dict[str, Any], int], T],
    *,
    batch_size: Optional[int] = None,
    split_on_payload_too_large: Optional[bool] = None,
) -> Op[T]:
    """Sends prepared records in batches of at most ``batch_size`` (default ``cfg.max_batch_size``).

    A batch answered ``413 payload_too_large`` stored nothing: when it holds more than one record it is
    split in half and re-sent, and the rest of the call goes on with the smaller size. Integer counters of
    the answers are summed; ``finish(totals, requests)`` makes the result. On an error, the exception's
    ``details`` indexes are shifted to positions in ``records`` and ``partial_result`` holds what was stored
    before the failing batch.
    """
    size = cfg.max_batch_size if batch_size is None else batch_size
    if size < 1:
        raise ValueError("batch_size must be >= 1")
    split = (
        cfg.split_on_payload_too_large if split_on_payload_too_large is None else split_on_payload_too_large
    )
    totals: Dict[str, Any] = {}
    requests = 0
    pos = 0
    while pos < len(records):
        chunk = records[pos : pos + size]
        try:
            answer = yield from call(cfg, "POST", path, as_object, body={key: chunk}, idempotent=True)
        except PayloadTooLargeError as error:
            if split and len(chunk) > 1:
                size = max(1, len(chunk) // 2)
                logger.info(
                    "enterprise_ai: %s: a batch of %d was too large (%s); sending batches of %d",
                    path,
                    len(chunk),
                    error.message,
                    size,
                )
                continue
            _annotate(error, pos, finish(dict(totals), requests))
            raise
        except EnterpriseAIError as error:
            _annotate(error, pos, finish(dict(totals), requests))
            raise
        _merge_counts(totals, answer)
        requests += 1
        pos += len(chunk)
    return finish(totals, requests)


def _annotate(error: EnterpriseAIError, offset: int, partial: Any) -> None:
    if offset:
        error.details = [
            FieldError(field=d.field, reason=d.reason, index=None if d.index is None else d.index + offset)
            for d in error.details
        ]
    error.partial_result = partial


# ------------------------------------------------------------------------------------------------ drivers


def _request(http: Union[httpx.Client, httpx.AsyncClient], cfg: ClientConfig, action: Send) -> httpx.Request:
    return http.build_request(
        action.method,
        cfg.url(action.path),
        params=action.params,
        content=action.body,
        headers=cfg.headers(action.body is not None, action.accept),
        timeout=httpx.Timeout(cfg.timeout),
    )


def run_sync(op: Op[T], http: httpx.Client, cfg: ClientConfig) -> T:
    """Carries out an operation with a blocking ``httpx.Client``."""
    feed: Outcome = None
    try:
        while True:
            action = op.send(feed)
            if isinstance(action, Sleep):
                time.sleep(action.seconds)
                feed = None
                continue
            try:
                feed = http.send(_request(http, cfg, action))
            except httpx.TransportError as exc:
                feed = exc
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        op.close()


async def run_async(op: Op[T], http: httpx.AsyncClient, cfg: ClientConfig) -> T:
    """Carries out an operation with an ``httpx.AsyncClient``."""
    feed: Outcome = None
    try:
        while True:
            action = op.send(feed)
            if isinstance(action, Sleep):
                await asyncio.sleep(action.seconds)
                feed = None
                continue
            try:
                feed = await http.send(_request(http, cfg, action))
            except httpx.TransportError as exc:
                feed = exc
    except StopIteration as stop:
        result: T = stop.value
        return result
    finally:
        op.close()


def split_count(totals: Mapping[str, Any], key: str) -> int:
    value = totals.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
