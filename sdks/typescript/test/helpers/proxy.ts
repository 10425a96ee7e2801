/**
 * A fault-injecting HTTP proxy in front of the real server: for each request, the test's plan may answer an
 * error itself (never reaching the server), forward and then replace the answer (a lost answer), or delay.
 * Everything else is forwarded unchanged. It records every request it saw.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Fault {
  /** HTTP status to answer. */
  status?: number;
  /** The envelope's code (default from the status); `null` answers `body` raw instead of an envelope. */
  code?: string | null;
  /** A raw body (with code: null). */
  body?: string;
  /** Retry-After header, in seconds. */
  retryAfter?: number;
  /** Forward the request to the server first, then answer the fault instead of the server's answer. */
  forwardFirst?: boolean;
  /** Wait this long before doing anything (the client may time out meanwhile). */
  delayMs?: number;
}

export interface SeenRequest {
  n: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** What the client was answered. */
  status?: number;
}

export interface FaultProxy {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

const CODE_OF: Record<number, string> = {
  403: "forbidden",
  404: "not_found",
  429: "rate_limited",
  500: "internal",
  502: "unavailable",
  503: "unavailable",
};

function envelope(code: string, n: number): string {
  const en = `Injected ${code} (fault proxy, request ${n})`;
  return JSON.stringify({
    error: { code, message: en, message_i18n: { en, fr: `${code} injecté (requête ${n})` }, details: null, request_id: `fault-${n}` },
  });
}

export async function startFaultProxy(
  target: string,
  plan: (n: number, req: SeenRequest) => Fault | undefined = () => undefined,
): Promise<FaultProxy> {
  const requests: SeenRequest[] = [];
  const forward = async (req: SeenRequest) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (["host", "connection", "content-length", "transfer-encoding", "keep-alive"].includes(k)) continue;
      if (typeof v === "string") headers[k] = v;
    }
    const init: RequestInit = { method: req.method, headers };
    if (req.body !== "" && req.method !== "GET" && req.method !== "HEAD") init.body = req.body;
    const res = await fetch(target + req.path, init);
    const body = await res.text();
    const out: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (!["content-length", "transfer-encoding", "connection", "content-encoding"].includes(k)) out[k] = v;
    });
    return { status: res.status, headers: out, body };
  };
  const send = (res: ServerResponse, status: number, headers: Record<string, string>, body: string) => {
    if (res.destroyed) return;
    res.writeHead(status, { ...headers, "content-length": String(Buffer.byteLength(body)) });
    res.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const seen: SeenRequest = {
          n: requests.length + 1,
          method: req.method ?? "GET",
          path: req.url ?? "/",
          headers: req.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        };
        requests.push(seen);
        try {
          const fault = plan(seen.n, seen);
          if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
          if (res.destroyed) return;
          if (!fault || fault.status === undefined) {
            const a = await forward(seen);
            seen.status = a.status;
            send(res, a.status, a.headers, a.body);
            return;
          }
          if (fault.forwardFirst) await forward(seen);
          const headers: Record<string, string> = { "x-request-id": `fault-${seen.n}` };
          if (fault.retryAfter !== undefined) headers["retry-after"] = String(fault.retryAfter);
          let body: string;
          if (fault.code === null) {
            body = fault.body ?? "";
            headers["content-type"] = "text/html";
          } else {
            body = envelope(fault.code ?? CODE_OF[fault.status] ?? "internal", seen.n);
            headers["content-type"] = "application/json";
          }
          seen.status = fault.status;
          send(res, fault.status, headers, body);
        } catch (e) {
          seen.status = 599;
          send(res, 502, { "content-type": "text/plain" }, `proxy error: ${String(e)}`);
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One call seen by {@link countingFetch}. */
export interface FetchCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  status?: number;
  /** The answer's `X-Request-Id`. */
  requestId?: string | null;
}

/** A `fetch` that counts the calls the SDK makes (and records what it sent). */
export function countingFetch(): { fetch: (input: string, init: RequestInit) => Promise<Response>; calls: FetchCall[] } {
  const calls: FetchCall[] = [];
  return {
    calls,
    fetch: async (input, init) => {
      const call: FetchCall = {
        url: input,
        method: init.method ?? "GET",
        headers: { ...(init.headers as Record<string, string>) },
        body: typeof init.body === "string" ? init.body : undefined,
      };
      calls.push(call);
      const res = await fetch(input, init);
      call.status = res.status;
      call.requestId = res.headers.get("x-request-id");
      return res;
    },
  };
}
