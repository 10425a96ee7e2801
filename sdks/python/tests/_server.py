"""Test infrastructure: a real ``eai-gpu serve`` process per need, and a fault-injecting HTTP proxy.

Nothing here imitates the server: every answer the SDK reads comes from a real ``eai-gpu serve``, except
the faults the proxy injects on purpose (503, 429, 500, delays, unknown codes) in front of it.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Deque, Dict, List, Mapping, Optional, Tuple

REPO_ROOT = Path(__file__).resolve().parents[3]


class BinaryNotFound(RuntimeError):
    pass


def find_binary() -> Path:
    """``EAI_GPU_BIN``, else ``<repo>/target/debug/eai-gpu``, else ``eai-gpu`` on PATH."""
    env = os.environ.get("EAI_GPU_BIN")
    if env:
        path = Path(env)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BinaryNotFound(f"EAI_GPU_BIN={env!r} is not an executable file")
        return path
    candidate = REPO_ROOT / "target" / "debug" / "eai-gpu"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    on_path = shutil.which("eai-gpu")
    if on_path:
        return Path(on_path)
    raise BinaryNotFound(
        "no eai-gpu server binary: set EAI_GPU_BIN=/path/to/eai-gpu, or build it (cargo build -p eai-gpu "
        f"gives {candidate}), or put eai-gpu on PATH. The SDK's tests run against a real server and never "
        "skip."
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def new_admin_key() -> str:
    return "eai_live_sdk" + secrets.token_hex(20)


class EaiServer:
    """``eai-gpu serve`` on a free port over a fresh SQLite data dir; :meth:`stop` kills it."""

    def __init__(self, binary: Path, env: Optional[Mapping[str, str]] = None, name: str = "main") -> None:
        self.binary = binary
        self.extra_env = dict(env or {})
        self.name = name
        self.admin_key = new_admin_key()
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"eai-gpu-sdk-{name}-"))
        self.log_path = self.data_dir / "server.log"
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout: float = 30.0) -> EaiServer:
        last_error = ""
        for _ in range(3):
            self.port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("EAI_")}
            env.update(
                {
                    "EAI_BOOTSTRAP_ADMIN_KEY": self.admin_key,
                    "EAI_DATA_DIR": str(self.data_dir),
                    # The hourly allocation batch writes events of its own a minute after start: off, so
                    # that what the tests read is only what they wrote.
                    "EAI_ALLOCATION_BATCH": "off",
                }
            )
            env.update(self.extra_env)
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(
                [str(self.binary), "serve", "--listen", f"127.0.0.1:{self.port}"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            log.close()
            deadline = time.monotonic() + ready_timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    last_error = f"exited with {self.proc.returncode}: {self.log_tail()}"
                    break
                try:
                    with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as resp:
                        if resp.status == 200:
                            return self
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
                time.sleep(0.05)
            else:
                self.stop()
                raise RuntimeError(
                    f"eai-gpu ({self.name}) not ready after {ready_timeout}s: {self.log_tail()}"
                )
            if "in use" not in last_error.lower():
                break
        raise RuntimeError(f"eai-gpu ({self.name}) did not start: {last_error}")

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


# ------------------------------------------------------------------------------------------ fault proxy


def envelope(code: str, message: str, status_text: str = "") -> bytes:
    return json.dumps(
        {
            "error": {
                "code": code,
                "message": message,
                "message_i18n": {"en": message, "fr": f"(fr) {message}"},
                "details": None,
                "request_id": f"proxy-{uuid.uuid4()}",
            }
        }
    ).encode()


@dataclass
class Fault:
    """What the proxy does to one matching request instead of relaying the server's answer."""

    status: int = 503
    code: Optional[str] = "unavailable"
    headers: Dict[str, str] = field(default_factory=dict)
    body: Optional[bytes] = None
    forward: bool = False  # relay the request to the server first (it is stored), then answer the fault
    delay: float = 0.0  # seconds to wait before answering
    method: Optional[str] = None
    path_prefix: Optional[str] = None

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path_prefix is None or path.startswith(self.path_prefix)
        )


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    status: int
    faulted: bool
    forwarded: bool


class FaultProxy:
    """A stdlib HTTP proxy in a thread in front of a real server: answers queued faults to the first
    matching requests, relays everything else, and records every request it saw."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._faults: Deque[Fault] = collections.deque()
        self._lock = threading.Lock()
        self.seen: List[Seen] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy._handle(self)

            def do_POST(self) -> None:
                proxy._handle(self)

            def do_DELETE(self) -> None:
                proxy._handle(self)

            def do_PUT(self) -> None:
                proxy._handle(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(self, times: int = 1, **kwargs: Any) -> None:
        """Queues ``times`` faults (see :class:`Fault`)."""
        with self._lock:
            for _ in range(times):
                self._faults.append(Fault(**kwargs))

    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    def requests(self, method: Optional[str] = None, path_prefix: Optional[str] = None) -> List[Seen]:
        with self._lock:
            return [
                s
                for s in self.seen
                if (method is None or s.method == method)
                and (path_prefix is None or s.path.startswith(path_prefix))
            ]

    def _take(self, method: str, path: str) -> Optional[Fault]:
        with self._lock:
            for i, f in enumerate(self._faults):
                if f.matches(method, path):
                    del self._faults[i]
                    return f
        return None

    def _forward(
        self, method: str, path: str, headers: Mapping[str, str], body: bytes
    ) -> Tuple[int, List[Tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            skip = {
                "host",
                "connection",
                "keep-alive",
                "transfer-encoding",
                "content-length",
                "proxy-connection",
            }
            out = {k: v for k, v in headers.items() if k.lower() not in skip}
            conn.request(method, path, body=body if body else None, headers=out)
            resp = conn.getresponse()
            data = resp.read()
            hdrs = [
                (k, v)
                for k, v in resp.getheaders()
                if k.lower() not in ("transfer-encoding", "content-length", "connection", "keep-alive")
            ]
            return resp.status, hdrs, data
        finally:
            conn.close()

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        method = h.command
        path = h.path
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        headers = {k: v for k, v in h.headers.items()}
        fault = self._take(method, path)
        forwarded = False
        if fault is None:
            status, hdrs, data = self._forward(method, path, headers, body)
            forwarded = True
        else:
            if fault.forward:
                self._forward(method, path, headers, body)
                forwarded = True
            if fault.delay:
                time.sleep(fault.delay)
            status = fault.status
            data = (
                fault.body
                if fault.body is not None
                else envelope(fault.code or "unavailable", f"injected {status} by the test proxy")
            )
            hdrs = [("Content-Type", "application/json"), *fault.headers.items()]
        with self._lock:
            self.seen.append(Seen(method, path, status, fault is not None, forwarded))
        try:
            h.send_response(status)
            for k, v in hdrs:
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test)
