#!/usr/bin/env python3
"""The fault proxy the four SDK suites run contracts/v1/sdk/behaviour.json through.

It stands between an SDK and a real `eai-gpu serve` and forwards every request, except that the next requests
meet the faults a test queued, one fault per request, in order:

  {"status": 503, "code": "unavailable", "retry_after": "1"}   answered by the proxy with the error envelope
                                                                (not forwarded); "code" may be any string
  {"status": 502, "body": "html"}                               answered with an HTML page (what a load balancer
                                                                sends), not forwarded
  {"drop_answer": true}      forwarded (the server does the work), then the connection is closed unanswered
  {"reset": true}            the connection is closed unanswered, nothing forwarded
  {"delay_seconds": 2}       forwarded after the delay

Control (never forwarded, never logged):
  POST /__proxy/faults   {"faults": [...]}   replaces the queue and clears the log
  GET  /__proxy/log      {"requests": [...]} what came through since: method, path, at (seconds, monotonic),
                                             headers (lower-case names), records (the length of a batch's
                                             "samples" or "events"), fault, status (null: no answer sent)
  POST /__proxy/reset                        empties queue and log

Usage: python3 scripts/sdk/fault_proxy.py --upstream http://127.0.0.1:8080 [--port 0]
Prints `fault_proxy listening on http://127.0.0.1:PORT` once ready; runs until killed. Standard library only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
}


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.faults: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []
        self.seq = 0

    def next_fault(self) -> Optional[dict[str, Any]]:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def record(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.seq += 1
            entry["seq"] = self.seq
            self.log.append(entry)
            return entry


def envelope(status: int, code: str, request_id: str) -> bytes:
    message = f"fault_proxy: injected {status} {code}"
    return json.dumps(
        {
            "error": {
                "code": code,
                "message": message,
                "message_i18n": {"en": message, "fr": f"fault_proxy : {status} {code} injecté"},
                "details": None,
                "request_id": request_id,
            }
        }
    ).encode()


def records_of(body: bytes) -> Optional[int]:
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(doc, dict):
        for name in ("samples", "events"):
            if isinstance(doc.get(name), list):
                return len(doc[name])
    return None


def make_handler(upstream: urllib.parse.SplitResult, state: State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, doc: Any) -> None:
            self._send(status, [("Content-Type", "application/json")], json.dumps(doc).encode())

        def _hang_up(self) -> None:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        def _control(self, body: bytes) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/__proxy/faults" and self.command == "POST":
                faults = json.loads(body or b"{}").get("faults", [])
                with state.lock:
                    state.faults = list(faults)
                    state.log = []
                self._json(200, {"queued": len(faults)})
            elif path == "/__proxy/log" and self.command == "GET":
                with state.lock:
                    self._json(200, {"requests": list(state.log), "faults_left": len(state.faults)})
            elif path == "/__proxy/reset" and self.command == "POST":
                with state.lock:
                    state.faults = []
                    state.log = []
                self._json(200, {"reset": True})
            else:
                self._json(404, {"error": f"no control endpoint {self.command} {path}"})

        def _forward(self, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=120)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                headers["Host"] = upstream.netloc
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                kept = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP]
                return resp.status, kept, data
            finally:
                conn.close()

        def _handle(self) -> None:
            body = self._body()
            if self.path.startswith("/__proxy/"):
                self._control(body)
                return
            fault = state.next_fault()
            entry = state.record(
                {
                    "method": self.command,
                    "path": self.path,
                    "at": time.monotonic(),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "records": records_of(body),
                    "fault": fault,
                    "status": None,
                }
            )
            fault = fault or {}
            if fault.get("reset"):
                self._hang_up()
                return
            if "status" in fault:
                status = int(fault["status"])
                request_id = f"fault-proxy-{entry['seq']}"
                headers = [("X-Request-Id", request_id)]
                if fault.get("retry_after") is not None:
                    headers.append(("Retry-After", str(fault["retry_after"])))
                if fault.get("body") == "html":
                    headers.append(("Content-Type", "text/html"))
                    page = f"<html><body><h1>{status} Bad Gateway</h1></body></html>".encode()
                else:
                    headers.append(("Content-Type", "application/json"))
                    page = envelope(status, str(fault.get("code") or "unavailable"), request_id)
                entry["status"] = status
                self._send(status, headers, page)
                return
            if fault.get("delay_seconds"):
                time.sleep(float(fault["delay_seconds"]))
            try:
                status, headers, data = self._forward(body)
            except OSError as exc:
                entry["status"] = 502
                self._send(502, [("Content-Type", "text/plain")], f"fault_proxy: upstream failed: {exc}".encode())
                return
            if fault.get("drop_answer"):
                self._hang_up()
                return
            entry["status"] = status
            try:
                self._send(status, headers, data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the eai-gpu server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one)")
    args = parser.parse_args()
    upstream = urllib.parse.urlsplit(args.upstream)
    if upstream.scheme != "http" or not upstream.hostname or not upstream.port:
        sys.exit("fault_proxy: --upstream must be http://HOST:PORT")
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(upstream, State()))
    server.daemon_threads = True
    print(f"fault_proxy listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
