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
    "RequestOptions",
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

# The defaults of ``contracts/v1/sdk/behaviour.json`` (``defaults``), the same in the four SDKs.
#: Seconds per HTTP exchange.
DEFAULT_TIMEOUT = 30.0
#: Further attempts after the first.
DEFAULT_MAX_RETRIES = 3
#: Backoff without ``Retry-After``: base and cap, seconds.
DEFAULT_BACKOFF_BASE = 0.5
DEFAULT_BACKOFF_MAX = 8.0
#: A ``Retry-After`` above this many seconds is not waited for.
DEFAULT_MAX_RETRY_AFTER = 60.0
#: Records per request by default: half the server's default ``EAI_MAX_BATCH`` (10,000).
DEFAULT_MAX_BATCH_SIZE = 5000
#: The usage emitter: seconds an event may wait for its batch, events queued at most.
DEFAULT_FLUSH_INTERVAL = 1.0
DEFAULT_USAGE_MAX_QUEUE = 10_000

#: ``eai-gpu-sdk-<language>/<version>`` (behaviour.json ``headers.user_agent_prefix``).
USER_AGENT = f"eai-gpu-sdk-python/{__version__}"


# ------------------------------------------------------------------------------------------------- actions


@dataclass(frozen=True)
class Send:
    """Send one HTTP request; the operation receives an ``httpx.Response`` or the transport exception."""

    method: str
    path: str
    params: Optional[Dict[str, str]] = None
    body: Optional[bytes] = None
    accept: Optional[str] = None
    idempotency_key: Optional[str] = None


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` (between attempts); the operation receives ``None``."""

    seconds: float


Action = Union[Send, Sleep]
Outcome = Union[httpx.Response, BaseException, None]
#: An operation: yields actions, receives outcomes, returns the call's result.
Op = Generator[Action, Outcome, T]


# ------------------------------------------------------------------------------------------ configuration


#: The retry table of ``contracts/v1/sdk/behaviour.json`` (``retried``): error statuses retried, and the codes
#: of a 409 that are.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
RETRIED_CODES_ON_409 = frozenset({"idempotency_key_in_flight"})

#: The headers of the one behaviour.
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
REQUEST_ID_HEADER = "X-Request-Id"
TRACEPARENT_HEADER = "traceparent"


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before another attempt (``contracts/v1/sdk/behaviour.json``).

    Retried, at most ``max_retries`` more attempts: every transport failure (connection refused or reset, an
    answer lost, a timeout), ``408``, ``429``, ``500``, ``502``, ``503``, ``504`` and a ``409
    idempotency_key_in_flight``. Every call may be retried: each POST and DELETE carries an
    ``Idempotency-Key`` (the same on its retries), so the server answers a repeat with the first answer.

    The wait is the answer's ``Retry-After`` exactly when it has one (above ``max_retry_after`` the error is
    raised at once, not waited for); else, before retry ``n`` (1, 2, ...),
    ``d = min(base_delay * 2**(n-1), max_delay)`` and the wait is ``d/2 + uniform(0, d/2)``.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    base_delay: float = DEFAULT_BACKOFF_BASE
    max_delay: float = DEFAULT_BACKOFF_MAX
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.base_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("retry delays must be >= 0")

    def backoff(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1 for the first) without a ``Retry-After``."""
        d = min(self.base_delay * float(2 ** min(max(retry, 1) - 1, 30)), self.max_delay)
        return d / 2 + random.uniform(0.0, d / 2)

    def delay(self, retry: int, retry_after: Optional[float]) -> Optional[float]:
        """Seconds to wait before retry number ``retry`` (1 for the first); ``None``: do not retry (a
        ``Retry-After`` above ``max_retry_after``)."""
        if retry_after is not None:
            wait = max(retry_after, 0.0)
            return None if wait > self.max_retry_after else wait
        return self.backoff(retry)

    @staticmethod
    def retries_status(status: int, code: Optional[str] = None) -> bool:
        """Whether an error answer may be retried."""
        if status == 409:
            return code in RETRIED_CODES_ON_409
        return status in RETRIED_STATUSES

    @staticmethod
    def retries_transport(exc: BaseException) -> bool:
        """Whether a transport failure may be retried: every one that left no answer (refused, reset, lost,
        timed out); not a misuse such as an unsupported URL scheme."""
        return isinstance(
            exc, (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)
        )


@dataclass(frozen=True)
class RequestOptions:
    """Options of the requests of one client (see :meth:`EnterpriseAI.with_options`): meant for one call.

    ``idempotency_key``: sent as ``Idempotency-Key`` instead of a fresh UUID v4 (a batched ingest's later
    parts send ``<key>-2``, ``<key>-3``, ...); ``traceparent``: the W3C trace context to forward;
    ``extra_headers``: more headers.
    """

    idempotency_key: Optional[str] = None
    traceparent: Optional[str] = None
    extra_headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientConfig:
    """Everything a request needs; immutable, shared by a client and its resources."""

    base_url: str
    api_key: str = field(repr=False)
    tenant: Optional[str] = None
    locale: str = "en"
    timeout: float = DEFAULT_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    split_on_payload_too_large: bool = True
    default_headers: Mapping[str, str] = field(default_factory=dict)
    request: RequestOptions = field(default_factory=RequestOptions)
    logger: Optional[logging.Logger] = field(default=None, compare=False)

    def url(self, path: str) -> str:
        return self.base_url + path

    @property
    def log(self) -> logging.Logger:
        """The client's logger (``logger=``), else the ``enterprise_ai`` logger."""
        return self.logger or logger

    def headers(
        self, has_body: bool, accept: Optional[str] = None, idempotency_key: Optional[str] = None
    ) -> Dict[str, str]:
        h: Dict[str, str] = {"Accept": accept or "application/json", "User-Agent": USER_AGENT}
        h.update(self.default_headers)
        h.update(self.request.extra_headers)
        h["Authorization"] = f"Bearer {self.api_key}"
        h["Accept-Language"] = self.locale
        if self.tenant:
            h["X-EAI-Tenant"] = self.tenant
        if has_body:
            h["Content-Type"] = "application/json"
        if self.request.traceparent:
            h[TRACEPARENT_HEADER] = self.request.traceparent
        if idempotency_key is not None:
            h[IDEMPOTENCY_KEY_HEADER] = idempotency_key
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


def new_idempotency_key() -> str:
    """A fresh ``Idempotency-Key``: a random UUID v4."""
    return str(uuid.uuid4())


def call(
    cfg: ClientConfig,
    method: str,
    path: str,
    parse: Callable[[Any], T],
    *,
    params: Optional[Mapping[str, Optional[str]]] = None,
    body: Any = NO_BODY,
    accept: Optional[str] = None,
    binary: bool = False,
    idempotency_key: Optional[str] = None,
) -> Op[T]:
    """One API call with its retries: sends, retries per :class:`RetryPolicy`, raises the error of the final
    failure, or returns ``parse(json)`` of the answer (``parse(bytes)`` of its body when ``binary``: a file
    such as a FOCUS export; errors still come as the JSON envelope).

    A POST or a DELETE carries an ``Idempotency-Key``: ``idempotency_key``, else the client's per-request
    one, else a fresh UUID v4; the same on every retry of the call. The answer's ``X-Request-Id`` is set on
    the result (``result.request_id``) when the result can hold it.
    """
    if body is NO_BODY:
        content: Optional[bytes] = None
    elif isinstance(body, RawJson):
        content = body.content
    else:
        content = encode(body)
    query = {k: v for k, v in (params or {}).items() if v is not None} or None
    key: Optional[str] = None
    if method.upper() in ("POST", "DELETE", "PUT", "PATCH"):
        key = idempotency_key or cfg.request.idempotency_key or new_idempotency_key()
    policy = cfg.retry
    log = cfg.log
    attempt = 0
    while True:
        attempt += 1
        outcome = yield Send(method, path, query, content, accept, key)
        retry_after: Optional[float] = None
        if isinstance(outcome, BaseException):
            error: EnterpriseAIError = _transport_error(outcome, method, path)
            retry = policy.retries_transport(outcome)
            status_text = type(outcome).__name__
        elif isinstance(outcome, httpx.Response):
            status_text = str(outcome.status_code)
            if outcome.status_code < 300:
                log.debug(
                    "enterprise_ai: %s %s -> %s (attempt %d)", method, path, outcome.status_code, attempt
                )
                if binary:
                    return parse(outcome.content)
                return _parse_answer(outcome, parse, method, path)
            error = error_from_response(outcome)
            retry = policy.retries_status(outcome.status_code, error.code)
            retry_after = error.retry_after
        else:  # pragma: no cover - a driver bug
            raise TypeError(f"unexpected outcome {outcome!r}")
        wait = policy.delay(attempt, retry_after) if retry and attempt <= policy.max_retries else None
        if wait is None:
            log.info(
                "enterprise_ai: %s %s -> %s (attempt %d): %s; not retried",
                method,
                path,
                status_text,
                attempt,
                error.code,
            )
            if isinstance(outcome, BaseException):
                raise error from outcome
            raise error
        log.warning(
            "enterprise_ai: %s %s -> %s (attempt %d): %s; retry %d of %d in %.2f s",
            method,
            path,
            status_text,
            attempt,
            error.code,
            attempt,
            policy.max_retries,
            wait,
        )
        yield Sleep(wait)


def _attach_request_id(result: Any, request_id: Optional[str]) -> None:
    """Sets ``request_id`` on a result that can hold it (a model; kept out of its equality and dict form)."""
    setter = getattr(result, "_set_request_id", None)
    if setter is not None:
        setter(request_id)


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
        result = parse(data)
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        raise InvalidResponseError(
            f"{method} {path}: the answer does not match the contract ({type(exc).__name__}: {exc})",
            status=response.status_code,
            request_id=request_id,
        ) from exc
    _attach_request_id(result, request_id)
    return result


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


class _Counts(Dict[str, Any]):
    """One batch's answer, with its request id."""

    request_id: Optional[str] = None

    def _set_request_id(self, request_id: Optional[str]) -> None:
        self.request_id = request_id


def _counts(data: Any) -> _Counts:
    return _Counts(as_object(data))


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
    part = 0
    last_request_id: Optional[str] = None
    given_key = cfg.request.idempotency_key
    while pos < len(records):
        chunk = records[pos : pos + size]
        part += 1
        # Each part is its own request with its own key (a caller's key: <key>, <key>-2, <key>-3, ...).
        part_key = None if given_key is None else (given_key if part == 1 else f"{given_key}-{part}")
        try:
            answer = yield from call(cfg, "POST", path, _counts, body={key: chunk}, idempotency_key=part_key)
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
        last_request_id = answer.request_id
        requests += 1
        pos += len(chunk)
    result = finish(totals, requests)
    _attach_request_id(result, last_request_id)
    return result


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
        headers=cfg.headers(action.body is not None, action.accept, action.idempotency_key),
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
