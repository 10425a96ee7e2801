/** @internal Small helpers with no dependency, for Node and browsers alike. */

/** A random RFC 4122 version 4 UUID: `crypto.randomUUID()` where there is one. */
export function randomUUID(): string {
  const c = (globalThis as { crypto?: Crypto }).crypto;
  if (c && typeof c.randomUUID === "function") return c.randomUUID();
  const bytes = new Uint8Array(16);
  if (c && typeof c.getRandomValues === "function") c.getRandomValues(bytes);
  else for (let i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An environment variable where `process` exists (Node, Deno, Bun), else undefined (browsers). */
export function readEnv(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v === undefined || v === "" ? undefined : v;
}

/** The Node.js version where the SDK runs in Node, else undefined. */
export function nodeVersion(): string | undefined {
  const p = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof p?.versions?.node === "string" ? p.versions.node : undefined;
}

/** Waits `ms` milliseconds; rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** An instant as the API takes it: RFC 3339, UTC, milliseconds, `Z` (`2026-10-01T00:00:15.000Z`). */
export function isoInstant(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new RangeError("Invalid Date");
  return d.toISOString();
}

/**
 * A result of the API: the model, and the request id (`X-Request-Id`) of the answer it came from as the
 * non-enumerable `_request_id` (absent on an answer without one).
 */
export type WithRequestId<T> = T & { readonly _request_id?: string };

/**
 * @internal `value` with the answer's request id as its non-enumerable `_request_id` (an object result; a
 * string or `undefined` is returned as it is). Non-enumerable: `JSON.stringify` and `deepEqual` ignore it.
 */
export function withRequestId<T>(value: T, requestId: string | undefined): T {
  if (requestId !== undefined && typeof value === "object" && value !== null && Object.isExtensible(value)) {
    Object.defineProperty(value, "_request_id", { value: requestId, enumerable: false, configurable: true });
  }
  return value;
}

/**
 * The request id (`X-Request-Id`) of the answer a result came from: quote it when reporting a problem. For a
 * batched ingest, the last request's. `undefined` for a result that is no object (an empty answer, a string).
 *
 * @example
 * const tenants = await client.tenants.list();
 * console.log(requestIdOf(tenants)); // the same as (tenants as any)._request_id
 */
export function requestIdOf(result: unknown): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const id = (result as { _request_id?: unknown })._request_id;
  return typeof id === "string" ? id : undefined;
}
