"""The clients: :class:`EnterpriseAI` (blocking) and :class:`AsyncEnterpriseAI` (asyncio).

Both build the same immutable :class:`~enterprise_ai._core.ClientConfig` and run the same operations; they
differ only in the HTTP client that carries the requests out.
"""

from __future__ import annotations

import logging
import os
from types import TracebackType
from typing import Any, Dict, Mapping, Optional, Type, TypeVar

import httpx

from . import _operations as ops
from ._core import (
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_MAX,
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_TIMEOUT,
    ClientConfig,
    Op,
    RequestOptions,
    RetryPolicy,
    run_async,
    run_sync,
)
from ._json import JsonValue
from ._registry import operation
from .errors import ConfigurationError
from .resources import (
    AsyncAudit,
    AsyncAuth,
    AsyncFinops,
    AsyncProviders,
    AsyncTenants,
    AsyncUsage,
    Audit,
    Auth,
    Finops,
    Providers,
    Tenants,
    Usage,
)

__all__ = ["AsyncEnterpriseAI", "EnterpriseAI"]

T = TypeVar("T")

_UNSET: Any = object()

ENV_API_KEY = "EAI_API_KEY"
ENV_BASE_URL = "EAI_BASE_URL"


def _build_config(
    *,
    base_url: Optional[str],
    api_key: Optional[str],
    tenant: Optional[str],
    locale: str,
    timeout: float,
    max_retries: int,
    max_batch_size: int,
    split_on_payload_too_large: bool,
    retry_base_delay: float,
    retry_max_delay: float,
    max_retry_after: float,
    default_headers: Optional[Mapping[str, str]],
    logger: Optional[logging.Logger] = None,
    request: Optional[RequestOptions] = None,
) -> ClientConfig:
    url = base_url if base_url is not None else os.environ.get(ENV_BASE_URL)
    if not url:
        raise ConfigurationError(
            f'no base URL: pass base_url="https://eai-gpu.example.com" or set {ENV_BASE_URL}'
        )
    url = url.strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"base_url must start with http:// or https:// (got {url!r})")
    key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
    if not key:
        raise ConfigurationError(f'no API key: pass api_key="eai_live_..." or set {ENV_API_KEY}')
    key = key.strip()
    if any(c.isspace() for c in key):
        raise ConfigurationError("the API key must not contain whitespace")
    if tenant is not None and not tenant.strip():
        raise ConfigurationError("tenant must be a slug or a uuid, or None")
    if not locale or not locale.strip():
        raise ConfigurationError("locale must be a language tag such as 'en' or 'fr'")
    if timeout <= 0:
        raise ConfigurationError("timeout must be > 0 seconds")
    if max_batch_size < 1:
        raise ConfigurationError("max_batch_size must be >= 1")
    try:
        retry = RetryPolicy(
            max_retries=max_retries,
            base_delay=retry_base_delay,
            max_delay=retry_max_delay,
            max_retry_after=max_retry_after,
        )
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from exc
    return ClientConfig(
        base_url=url,
        api_key=key,
        tenant=tenant.strip() if tenant is not None else None,
        locale=locale.strip(),
        timeout=float(timeout),
        retry=retry,
        max_batch_size=int(max_batch_size),
        split_on_payload_too_large=bool(split_on_payload_too_large),
        default_headers=dict(default_headers or {}),
        request=request or RequestOptions(),
        logger=logger,
    )


def _replace(config: ClientConfig, changes: Dict[str, Any]) -> ClientConfig:
    """``config`` with the options of :meth:`EnterpriseAI.with_options` applied (validated again)."""
    known = {
        "base_url",
        "api_key",
        "tenant",
        "locale",
        "timeout",
        "max_retries",
        "max_batch_size",
        "split_on_payload_too_large",
        "retry_base_delay",
        "retry_max_delay",
        "max_retry_after",
        "default_headers",
        "logger",
    }
    request_options = {"idempotency_key", "traceparent", "extra_headers"}
    unknown = set(changes) - known - request_options
    if unknown:
        raise TypeError(f"unknown option(s): {', '.join(sorted(unknown))}")
    current: Dict[str, Any] = {
        "base_url": config.base_url,
        "api_key": config.api_key,
        "tenant": config.tenant,
        "locale": config.locale,
        "timeout": config.timeout,
        "max_retries": config.retry.max_retries,
        "max_batch_size": config.max_batch_size,
        "split_on_payload_too_large": config.split_on_payload_too_large,
        "retry_base_delay": config.retry.base_delay,
        "retry_max_delay": config.retry.max_delay,
        "max_retry_after": config.retry.max_retry_after,
        "default_headers": config.default_headers,
        "logger": config.logger,
    }
    current.update({k: v for k, v in changes.items() if k in known})
    req = config.request
    if request_options & set(changes):
        req = RequestOptions(
            idempotency_key=changes.get("idempotency_key", req.idempotency_key),
            traceparent=changes.get("traceparent", req.traceparent),
            extra_headers=dict(changes.get("extra_headers", req.extra_headers) or {}),
        )
    return _build_config(**current, request=req)


class _ClientBase:
    _config: ClientConfig

    @property
    def base_url(self) -> str:
        """The control plane's URL."""
        return self._config.base_url

    @property
    def tenant(self) -> Optional[str]:
        """The tenant the client signs its calls in to (``X-EAI-Tenant``), or ``None``."""
        return self._config.tenant

    @property
    def locale(self) -> str:
        """The language of error messages (``Accept-Language``)."""
        return self._config.locale

    @property
    def timeout(self) -> float:
        """Seconds to wait for each HTTP exchange."""
        return self._config.timeout

    @property
    def max_retries(self) -> int:
        """Attempts after the first one, for retryable failures."""
        return self._config.retry.max_retries

    @property
    def retry_policy(self) -> RetryPolicy:
        """Retries: ``max_retries``, ``base_delay``, ``max_delay``, ``max_retry_after``."""
        return self._config.retry

    @property
    def max_batch_size(self) -> int:
        """Samples or events per request at most."""
        return self._config.max_batch_size

    def __repr__(self) -> str:
        # Never the API key, not even a part of it.
        return (
            f"{type(self).__name__}(base_url={self._config.base_url!r}, api_key='<redacted>', "
            f"tenant={self._config.tenant!r}, locale={self._config.locale!r}, "
            f"timeout={self._config.timeout!r}, max_retries={self._config.retry.max_retries!r})"
        )


class EnterpriseAI(_ClientBase):
    """The eai-gpu client (blocking). Thread-safe; reuse one per process.

    Args:
        base_url: the control plane, e.g. ``"https://eai-gpu.internal:8443"`` (default: env ``EAI_BASE_URL``).
        api_key: ``eai_live_...`` (default: env ``EAI_API_KEY``; one of them is required).
        tenant: slug or uuid of the tenant to sign calls in to (``X-EAI-Tenant``): a platform key's reads
            become that tenant's; a tenant key may only name its own.
        locale: language of error messages, ``"en"`` or ``"fr"`` (``Accept-Language``).
        timeout: seconds for each HTTP exchange (connect, write, read).
        max_retries: more attempts for connection errors, timeouts, 429 and 5xx (0 disables retries).
        max_batch_size: samples/events per request (default 5,000; the server's default limit is 10,000).
        split_on_payload_too_large: split a batch answered 413 in half and re-send it (default True).
        retry_base_delay, retry_max_delay: exponential backoff with full jitter, in seconds.
        max_retry_after: cap on a server's ``Retry-After``, in seconds.
        default_headers: extra headers on every request.
        http_client: an ``httpx.Client`` to use (proxies, TLS, event hooks); the SDK does not close it.
            ``timeout`` still applies to every request.
        logger: a ``logging.Logger`` for the SDK's records of each attempt (method, path, status, attempt,
            wait; never a secret); default the ``enterprise_ai`` logger.

    Use it as a context manager, or call :meth:`close`::

        with EnterpriseAI(base_url="https://eai-gpu.internal", api_key="eai_live_...") as client:
            print(client.auth.whoami())
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        tenant: Optional[str] = None,
        locale: str = "en",
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        split_on_payload_too_large: bool = True,
        retry_base_delay: float = DEFAULT_BACKOFF_BASE,
        retry_max_delay: float = DEFAULT_BACKOFF_MAX,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.Client] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        self._config = _build_config(
            base_url=base_url,
            api_key=api_key,
            tenant=tenant,
            locale=locale,
            timeout=timeout,
            max_retries=max_retries,
            max_batch_size=max_batch_size,
            split_on_payload_too_large=split_on_payload_too_large,
            retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay,
            max_retry_after=max_retry_after,
            default_headers=default_headers,
            logger=logger,
        )
        self._owns_http = http_client is None
        self._http: httpx.Client = http_client or httpx.Client(
            timeout=httpx.Timeout(self._config.timeout), follow_redirects=False
        )
        self._init_resources()

    def _init_resources(self) -> None:
        self.finops = Finops(self)
        """GPU samples, allocation, allocation policies."""
        self.providers = Providers(self)
        """The providers catalog."""
        self.usage = Usage(self)
        """Usage events."""
        self.tenants = Tenants(self)
        """Registered tenants."""
        self.auth = Auth(self)
        """Identity and API keys."""
        self.audit = Audit(self)
        """The audit trail."""

    def _run(self, op: Op[T]) -> T:
        if self._http.is_closed:
            op.close()
            raise RuntimeError("this client is closed")
        return run_sync(op, self._http, self._config)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Optional[str]]] = None,
        json: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> JsonValue:
        """Any call of the API (a raw escape hatch) with the client's auth, headers, retries, idempotency
        keys and errors: ``client.request("GET", "/v1/tenants")``. Returns the answer's JSON (``Decimal`` for
        non-integer numbers), ``None`` for an empty answer."""
        return self._run(ops.raw_request(self._config, method, path, params, json, idempotency_key))

    @operation("healthz")
    def healthz(self) -> JsonValue:
        """``GET /healthz``: the process is up."""
        return self._run(ops.healthz(self._config))

    @operation("readyz")
    def readyz(self) -> JsonValue:
        """``GET /readyz``: the server can serve (its storage answers)."""
        return self._run(ops.readyz(self._config))

    @operation("metrics")
    def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        return self._run(ops.metrics(self._config))

    @operation("openapi")
    def openapi(self) -> JsonValue:
        """``GET /openapi.json``: the contract the server serves."""
        return self._run(ops.openapi(self._config))

    def with_options(self, **options: Any) -> EnterpriseAI:
        """A client with some options changed (``tenant``, ``locale``, ``timeout``, ``max_retries``,
        ``logger``, ...) sharing this one's connections. Closing it does not close them::

            acme = client.with_options(tenant="acme")

        Per-request options, for the call you make with the returned client: ``idempotency_key`` (sent as
        ``Idempotency-Key`` instead of a fresh UUID v4), ``traceparent`` (forwarded as the ``traceparent``
        header), ``extra_headers``::

            client.with_options(idempotency_key="order-42", traceparent=tp).tenants.create(slug="a", name="A")
        """
        clone = EnterpriseAI.__new__(EnterpriseAI)
        clone._config = _replace(self._config, options)
        clone._owns_http = False
        clone._http = self._http
        clone._init_resources()
        return clone

    @property
    def is_closed(self) -> bool:
        return self._http.is_closed

    def close(self) -> None:
        """Closes the connections (when the client opened them). Idempotent."""
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> EnterpriseAI:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


class AsyncEnterpriseAI(_ClientBase):
    """The eai-gpu client for asyncio: the same options and resources as :class:`EnterpriseAI`, with
    ``async`` methods::

        async with AsyncEnterpriseAI(base_url="https://eai-gpu.internal", api_key="eai_live_...") as client:
            allocation = await client.finops.gpu_allocation(start="2026-10-01", end="2026-10-31")
    """

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        tenant: Optional[str] = None,
        locale: str = "en",
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        *,
        max_batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        split_on_payload_too_large: bool = True,
        retry_base_delay: float = DEFAULT_BACKOFF_BASE,
        retry_max_delay: float = DEFAULT_BACKOFF_MAX,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        default_headers: Optional[Mapping[str, str]] = None,
        http_client: Optional[httpx.AsyncClient] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        self._config = _build_config(
            base_url=base_url,
            api_key=api_key,
            tenant=tenant,
            locale=locale,
            timeout=timeout,
            max_retries=max_retries,
            max_batch_size=max_batch_size,
            split_on_payload_too_large=split_on_payload_too_large,
            retry_base_delay=retry_base_delay,
            retry_max_delay=retry_max_delay,
            max_retry_after=max_retry_after,
            default_headers=default_headers,
            logger=logger,
        )
        self._owns_http = http_client is None
        self._http: httpx.AsyncClient = http_client or httpx.AsyncClient(
            timeout=httpx.Timeout(self._config.timeout), follow_redirects=False
        )
        self._init_resources()

    def _init_resources(self) -> None:
        self.finops = AsyncFinops(self)
        """GPU samples, allocation, allocation policies."""
        self.providers = AsyncProviders(self)
        """The providers catalog."""
        self.usage = AsyncUsage(self)
        """Usage events."""
        self.tenants = AsyncTenants(self)
        """Registered tenants."""
        self.auth = AsyncAuth(self)
        """Identity and API keys."""
        self.audit = AsyncAudit(self)
        """The audit trail."""

    async def _run(self, op: Op[T]) -> T:
        if self._http.is_closed:
            op.close()
            raise RuntimeError("this client is closed")
        return await run_async(op, self._http, self._config)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Optional[Mapping[str, Optional[str]]] = None,
        json: Any = None,
        idempotency_key: Optional[str] = None,
    ) -> JsonValue:
        """See :meth:`EnterpriseAI.request`."""
        return await self._run(ops.raw_request(self._config, method, path, params, json, idempotency_key))

    @operation("healthz")
    async def healthz(self) -> JsonValue:
        """``GET /healthz``: the process is up."""
        return await self._run(ops.healthz(self._config))

    @operation("readyz")
    async def readyz(self) -> JsonValue:
        """``GET /readyz``: the server can serve (its storage answers)."""
        return await self._run(ops.readyz(self._config))

    @operation("metrics")
    async def metrics(self) -> str:
        """``GET /metrics``: the Prometheus text."""
        return await self._run(ops.metrics(self._config))

    @operation("openapi")
    async def openapi(self) -> JsonValue:
        """``GET /openapi.json``: the contract the server serves."""
        return await self._run(ops.openapi(self._config))

    def with_options(self, **options: Any) -> AsyncEnterpriseAI:
        """A client with some options changed, sharing this one's connections (see
        :meth:`EnterpriseAI.with_options`)."""
        clone = AsyncEnterpriseAI.__new__(AsyncEnterpriseAI)
        clone._config = _replace(self._config, options)
        clone._owns_http = False
        clone._http = self._http
        clone._init_resources()
        return clone

    @property
    def is_closed(self) -> bool:
        return self._http.is_closed

    async def close(self) -> None:
        """Closes the connections (when the client opened them). Idempotent."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncEnterpriseAI:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()


def _blocking_twin(client: AsyncEnterpriseAI) -> EnterpriseAI:
    """A blocking client with an async client's configuration and its own connections (for the usage
    emitter's thread)."""
    twin = EnterpriseAI.__new__(EnterpriseAI)
    twin._config = client._config
    twin._owns_http = True
    twin._http = httpx.Client(timeout=httpx.Timeout(client._config.timeout), follow_redirects=False)
    twin._init_resources()
    return twin
