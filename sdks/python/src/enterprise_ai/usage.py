"""Usage reporting for workers: :class:`Emitter`, a background batcher of usage events.

::

    from enterprise_ai import EnterpriseAI
    from enterprise_ai.usage import Emitter

    client = EnterpriseAI()  # EAI_BASE_URL, EAI_API_KEY (a tenant_admin/developer or usage_reporter key)
    with Emitter(client, defaults={"source": "worker", "usage_type": "llm_tokens"}) as emitter:
        for job in jobs:
            ...
            emitter.emit(deployment_id="vllm-llama-70b", units={"tokens_in": 812, "tokens_out": 97})
    # leaving the block flushes: every event was delivered (or close() timed out and said so)

Delivery is *at least once* with stable ids: ``emit`` gives each event its ``event_id`` (uuid4) at once, so
a re-sent event replaces the stored one on the server and never doubles. A batch that fails for a transient
reason (connection, timeout, 429, 5xx) stays at the head of the queue and is sent again, same ids, after a
backoff, for as long as the process lives. A batch the server *refuses* (422 and other 4xx) is never retried:
with a 422 naming records only those are dropped and the rest are sent again; otherwise the batch is dropped.
Either way ``on_error`` is called and the events are counted in ``stats.failed``.

Queue policy: at most ``max_queue_size`` events wait (the batch in flight included). When it is full,
``on_full`` decides: ``"block"`` (default) waits up to ``block_timeout`` seconds for room, then raises
:class:`EmitterQueueFullError`; ``"raise"`` raises at once; ``"drop"`` discards the new event (counted in
``stats.dropped``, logged). Events are held in memory only: what is still queued when the process dies is
lost (``close()`` waits up to ``close_timeout`` for delivery and logs what it could not deliver; see
:meth:`Emitter.pending_events` to persist it yourself).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Type, Union

from ._client import AsyncEnterpriseAI, EnterpriseAI, _blocking_twin
from ._core import DEFAULT_FLUSH_INTERVAL, DEFAULT_USAGE_MAX_QUEUE, prepare_event
from .errors import (
    APIConnectionError,
    EnterpriseAIError,
    RateLimitError,
    ValidationError,
)

__all__ = ["Emitter", "EmitterQueueFullError", "EmitterStats"]

logger = logging.getLogger("enterprise_ai.usage")

ErrorHandler = Callable[[EnterpriseAIError, List[Dict[str, Any]]], None]

_REQUIRED = ("usage_type", "source", "units")
_ON_FULL = ("block", "raise", "drop")


class EmitterQueueFullError(EnterpriseAIError):
    """The emitter's queue is full (``on_full="raise"``, or ``"block"`` past ``block_timeout``)."""

    default_code = "queue_full"


@dataclass(frozen=True)
class EmitterStats:
    """Counters of an :class:`Emitter` (events unless said otherwise)."""

    emitted: int
    """Accepted by :meth:`Emitter.emit` (dropped ones excluded)."""
    delivered: int
    """Acknowledged by the server."""
    failed: int
    """Refused by the server (never retried; reported to ``on_error``)."""
    dropped: int
    """Discarded by ``on_full="drop"``."""
    pending: int
    """Waiting in the queue (in flight included)."""
    requests: int
    """Successful ingest requests."""
    retries: int
    """Batches sent again after a transient failure."""


def _transient(error: EnterpriseAIError) -> bool:
    if isinstance(error, (APIConnectionError, RateLimitError)):
        return True
    return error.status is not None and error.status >= 500


class Emitter:
    """Batches usage events in a background thread and delivers them at least once.

    Args:
        client: an :class:`~enterprise_ai.EnterpriseAI` (shared, not closed by the emitter) or an
            :class:`~enterprise_ai.AsyncEnterpriseAI` (the emitter opens its own blocking connections with
            the same configuration).
        batch_size: events per request at most (default 500).
        flush_interval: seconds an event may wait for its batch to fill (default 1.0).
        max_queue_size: events waiting at most (default 10,000); see ``on_full``.
        on_full: ``"block"`` (default), ``"raise"`` or ``"drop"`` -- what :meth:`emit` does when the queue is
            full.
        block_timeout: seconds ``"block"`` waits for room before raising (default 30).
        close_timeout: seconds :meth:`close` (and the ``atexit`` hook) waits for delivery (default 30).
        retry_base_delay, retry_max_delay: the emitter's backoff between failed deliveries of a batch
            (exponential with full jitter), on top of the client's own retries.
        defaults: fields merged under every event (e.g. ``{"source": "worker", "usage_type": "llm_tokens",
            "tenant_id": ...}``).
        on_error: called (from the background thread) with the error and the events the server refused.
    """

    def __init__(
        self,
        client: Union[EnterpriseAI, AsyncEnterpriseAI],
        *,
        batch_size: int = 500,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        max_queue_size: int = DEFAULT_USAGE_MAX_QUEUE,
        on_full: str = "block",
        block_timeout: float = 30.0,
        close_timeout: float = 30.0,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 30.0,
        defaults: Optional[Mapping[str, Any]] = None,
        on_error: Optional[ErrorHandler] = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if flush_interval <= 0:
            raise ValueError("flush_interval must be > 0")
        if max_queue_size < batch_size:
            raise ValueError("max_queue_size must be >= batch_size")
        if on_full not in _ON_FULL:
            raise ValueError(f"on_full must be one of {', '.join(_ON_FULL)}")
        self._owned_client: Optional[EnterpriseAI] = None
        if isinstance(client, AsyncEnterpriseAI):
            self._owned_client = _blocking_twin(client)
            self._client: EnterpriseAI = self._owned_client
        else:
            self._client = client
        self._batch_size = batch_size
        self._flush_interval = float(flush_interval)
        self._max_queue_size = max_queue_size
        self._on_full = on_full
        self._block_timeout = float(block_timeout)
        self._close_timeout = float(close_timeout)
        self._retry_base_delay = float(retry_base_delay)
        self._retry_max_delay = float(retry_max_delay)
        self._defaults: Dict[str, Any] = dict(defaults or {})
        self._on_error = on_error

        self._cond = threading.Condition()
        self._queue: Deque[Dict[str, Any]] = collections.deque()
        self._oldest_at: Optional[float] = None  # monotonic time the oldest queued event was emitted
        self._emitted = 0
        self._resolved = 0  # delivered + failed: events that left the queue
        self._delivered = 0
        self._failed = 0
        self._dropped = 0
        self._requests = 0
        self._retries = 0
        self._flush_target = 0
        self._closing = False
        self._closed = False
        self._thread: Optional[threading.Thread] = None
        self._pid = os.getpid()
        atexit.register(self._atexit)

    # ------------------------------------------------------------------------------------------ public

    def emit(self, event: Optional[Mapping[str, Any]] = None, /, **fields: Any) -> str:
        """Queues one usage event and returns its ``event_id`` at once (never waits for the network).

        The event is ``defaults``, then ``event``, then ``fields`` merged; ``event_id`` (uuid4),
        ``schema_version`` and ``occurred_at`` (now) are set here when absent, so every retry reuses them.
        ``usage_type``, ``source`` and ``units`` are required. When the queue is full, see ``on_full``.
        """
        merged: Dict[str, Any] = dict(self._defaults)
        if event is not None:
            if not isinstance(event, Mapping):
                raise TypeError(f"event must be a mapping, not {type(event).__name__}")
            merged.update(event)
        merged.update(fields)
        missing = [k for k in _REQUIRED if merged.get(k) is None]
        if missing:
            raise ValueError(f"usage event without {', '.join(missing)}")
        record = prepare_event(merged)
        event_id = str(record["event_id"])
        with self._cond:
            if self._closing or self._closed:
                raise RuntimeError("this emitter is closed")
            self._ensure_thread()
            if len(self._queue) >= self._max_queue_size:
                if self._on_full == "drop":
                    self._dropped += 1
                    if self._dropped == 1 or self._dropped % 1000 == 0:
                        logger.warning(
                            "enterprise_ai: usage emitter queue full (%d): %d event(s) dropped so far",
                            self._max_queue_size,
                            self._dropped,
                        )
                    return event_id
                if self._on_full == "raise":
                    raise EmitterQueueFullError(
                        f"the usage emitter's queue is full ({self._max_queue_size} events)"
                    )
                deadline = time.monotonic() + self._block_timeout
                while len(self._queue) >= self._max_queue_size and not self._closing:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise EmitterQueueFullError(
                            f"the usage emitter's queue stayed full ({self._max_queue_size} events) for "
                            f"{self._block_timeout:g} s"
                        )
                    self._cond.wait(left)
                if self._closing:
                    raise RuntimeError("this emitter is closed")
            if not self._queue:
                self._oldest_at = time.monotonic()
            self._queue.append(record)
            self._emitted += 1
            if len(self._queue) >= self._batch_size:
                self._cond.notify_all()
        return event_id

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Sends what is queued now and waits until every event emitted before the call left the queue
        (delivered, or refused by the server). Returns ``False`` if ``timeout`` seconds passed first."""
        with self._cond:
            target = self._emitted
            if self._resolved >= target:
                return True
            self._ensure_thread()
            self._flush_target = max(self._flush_target, target)
            self._cond.notify_all()
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._resolved < target:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self, timeout: Optional[float] = None) -> bool:
        """Flushes (waiting up to ``timeout``, default ``close_timeout``), stops the thread and, when the
        emitter opened its own connections, closes them. Idempotent; also runs at interpreter exit.
        Returns ``False`` (and logs how many events were left) when the queue could not be emptied."""
        wait = self._close_timeout if timeout is None else timeout
        with self._cond:
            if self._closed:
                return not self._queue
            self._closing = True
            self._flush_target = max(self._flush_target, self._emitted)
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(wait)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            left = len(self._queue)
        if left:
            logger.error(
                "enterprise_ai: usage emitter closed with %d undelivered event(s) (see pending_events())",
                left,
            )
        if self._owned_client is not None:
            self._owned_client.close()
        try:
            atexit.unregister(self._atexit)
        except Exception:  # pragma: no cover
            pass
        return left == 0

    async def aflush(self, timeout: Optional[float] = None) -> bool:
        """:meth:`flush` for asyncio code (runs in a worker thread, never blocks the loop)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.flush, timeout)

    async def aclose(self, timeout: Optional[float] = None) -> bool:
        """:meth:`close` for asyncio code (runs in a worker thread, never blocks the loop)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.close, timeout)

    def pending_events(self) -> List[Dict[str, Any]]:
        """A copy of the events not delivered yet (oldest first), e.g. to persist them after a failed
        :meth:`close`."""
        with self._cond:
            return [dict(e) for e in self._queue]

    @property
    def flush_interval(self) -> float:
        """Seconds an event may wait for its batch to fill."""
        return self._flush_interval

    @property
    def max_queue_size(self) -> int:
        """Events waiting at most."""
        return self._max_queue_size

    @property
    def stats(self) -> EmitterStats:
        """A snapshot of the counters."""
        with self._cond:
            return EmitterStats(
                emitted=self._emitted,
                delivered=self._delivered,
                failed=self._failed,
                dropped=self._dropped,
                pending=len(self._queue),
                requests=self._requests,
                retries=self._retries,
            )

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Emitter:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"<Emitter of {self._client.base_url} pending={s.pending} delivered={s.delivered} "
            f"failed={s.failed} dropped={s.dropped}{' closed' if self._closed else ''}>"
        )

    # ---------------------------------------------------------------------------------------- internals

    def _atexit(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - never fail interpreter exit
            logger.exception("enterprise_ai: closing the usage emitter at exit failed")

    def _ensure_thread(self) -> None:
        """Starts the sender (again after a fork: threads do not survive one). Holds ``_cond``."""
        pid = os.getpid()
        if self._thread is not None and self._thread.is_alive() and pid == self._pid:
            return
        self._pid = pid
        self._thread = threading.Thread(target=self._run, name="enterprise-ai-usage-emitter", daemon=True)
        self._thread.start()

    def _next_batch(self) -> Optional[List[Dict[str, Any]]]:
        """Waits until a batch is due and returns it (not removed from the queue), or ``None`` to stop."""
        with self._cond:
            while True:
                if self._closed:
                    return None  # close() gave up waiting: stop (what is left stays in pending_events())
                n = len(self._queue)
                if n == 0:
                    if self._closing:
                        return None
                    self._cond.wait()
                    continue
                due = (
                    n >= self._batch_size
                    or self._closing
                    or self._resolved < self._flush_target
                    or (
                        self._oldest_at is not None
                        and time.monotonic() - self._oldest_at >= self._flush_interval
                    )
                )
                if due:
                    return [self._queue[i] for i in range(min(n, self._batch_size))]
                wait = self._flush_interval
                if self._oldest_at is not None:
                    wait = max(0.0, self._oldest_at + self._flush_interval - time.monotonic())
                self._cond.wait(wait)

    def _sleep(self, seconds: float) -> bool:
        """Backoff between failed deliveries; ``False`` when the emitter was closed meanwhile."""
        deadline = time.monotonic() + seconds
        with self._cond:
            while not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return True
                self._cond.wait(left)
            return False

    def _resolve(self, count: int, *, delivered: int, failed: int, requests: int) -> None:
        with self._cond:
            for _ in range(count):
                self._queue.popleft()
            self._resolved += count
            self._delivered += delivered
            self._failed += failed
            self._requests += requests
            self._oldest_at = time.monotonic() if self._queue else None
            self._cond.notify_all()

    def _report(self, error: EnterpriseAIError, events: List[Dict[str, Any]]) -> None:
        logger.error("enterprise_ai: the server refused %d usage event(s): %s", len(events), error)
        if self._on_error is not None:
            try:
                self._on_error(error, events)
            except Exception:
                logger.exception("enterprise_ai: the emitter's on_error handler failed")

    def _backoff(self, failures: int) -> float:
        cap = min(self._retry_max_delay, self._retry_base_delay * 2 ** min(failures - 1, 20))
        return random.uniform(cap / 2, cap)

    def _run(self) -> None:
        failures = 0
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            try:
                result = self._client.usage.events(batch, batch_size=self._batch_size)
            except EnterpriseAIError as error:
                if _transient(error):
                    failures += 1
                    with self._cond:
                        self._retries += 1
                    delay = self._backoff(failures)
                    logger.warning(
                        "enterprise_ai: delivering %d usage event(s) failed (%s); again in %.2f s",
                        len(batch),
                        error,
                        delay,
                    )
                    if not self._sleep(delay):
                        return
                    continue
                failures = 0
                self._refused(batch, error)
                continue
            except Exception as error:  # a bug or an unexpected failure: keep the thread alive
                failures += 1
                logger.exception("enterprise_ai: the usage emitter failed unexpectedly: %s", error)
                if not self._sleep(self._backoff(failures)):
                    return
                continue
            failures = 0
            self._resolve(len(batch), delivered=len(batch), failed=0, requests=result.requests)

    def _refused(self, batch: List[Dict[str, Any]], error: EnterpriseAIError) -> None:
        """A batch the server refused: drop the records a 422 names and send the rest again, else drop all."""
        bad = set(error.indexes) if isinstance(error, ValidationError) else set()
        bad = {i for i in bad if 0 <= i < len(batch)}
        if not bad or len(bad) == len(batch):
            self._report(error, batch)
            self._resolve(len(batch), delivered=0, failed=len(batch), requests=0)
            return
        self._report(error, [batch[i] for i in sorted(bad)])
        keep = [e for i, e in enumerate(batch) if i not in bad]
        with self._cond:
            # The batch is the head of the queue: replace it by the records to send again.
            for _ in range(len(batch)):
                self._queue.popleft()
            self._queue.extendleft(reversed(keep))
            self._resolved += len(bad)
            self._failed += len(bad)
            self._cond.notify_all()
