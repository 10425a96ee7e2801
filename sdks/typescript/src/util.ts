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
