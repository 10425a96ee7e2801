// @ts-check
// The JSON API as the page calls it: the key as a bearer token, errors turned into ApiFailure (the API's
// envelope: code, message in English and French, details, request id), and the key kept for this browser tab
// only (sessionStorage).

import { lang, t } from "./i18n.js";

const KEY_STORAGE = "eai.portal.key";

/** The key kept for this tab, if any. @returns {string | null} */
export function storedKey() {
  try {
    return sessionStorage.getItem(KEY_STORAGE);
  } catch {
    return null;
  }
}

/** @param {string} key */
export function storeKey(key) {
  try {
    sessionStorage.setItem(KEY_STORAGE, key);
  } catch {
    // storage disabled: the key lives in memory until the page is left
  }
}

export function forgetKey() {
  try {
    sessionStorage.removeItem(KEY_STORAGE);
  } catch {
    // storage disabled
  }
}

/** A failed call: an error envelope of the API, an unexpected answer, or no answer at all (`network`). */
export class ApiFailure extends Error {
  /**
   * @param {{ status?: number, code: string, messages?: Record<string, string> | null, details?: any[],
   *   requestId?: string | null }} failure
   */
  constructor({ status = 0, code, messages = null, details = [], requestId = null }) {
    super(code);
    this.status = status;
    this.code = code;
    this.messages = messages;
    this.details = details;
    this.requestId = requestId;
  }

  /** The envelope's message in the chosen language (else its English one), or ours. */
  text() {
    if (this.messages) return this.messages[lang()] || this.messages.en || this.code;
    if (this.code === "network") return t("error.network");
    return t("error.unexpected", { status: this.status });
  }

  /** What the panel shows as the code: the API's, or the HTTP status of an answer without an envelope. */
  shownCode() {
    if (this.messages) return this.code;
    return this.status ? `HTTP ${this.status}` : null;
  }
}

/** The allocation's quantities: JSON numbers written exactly by the API, kept here as their exact text (the
 * money beside them is decimal text already), so that no figure goes through a float. */
const QUANTITIES = new Set([
  "gpu_seconds", "gpu_memory_gb_seconds", "energy_wh", "gpu_hours", "busy_gpu_hours", "estimated_gpu_seconds",
  "energy_kwh", "share", "tokens_in", "tokens_out", "tokens", "cached_tokens_in", "effective_tokens_in",
  // A recommendation's evidence.
  "utilization", "utilization_p50", "utilization_p95", "peak_busy_gpus", "unpriced_gpu_hours", "memory_peak_gb",
  "profile_memory_gb",
]);

/** JSON.parse's reviver: a quantity's source text where the browser gives it (else the number's shortest text). */
/** @param {string} name @param {unknown} value @param {{ source?: string }} [context] */
function exactQuantities(name, value, context) {
  if (typeof value !== "number" || !QUANTITIES.has(name)) return value;
  return context && typeof context.source === "string" ? context.source : String(value);
}

/** An answer's JSON text as the page reads it: its quantities kept as their exact text. @param {string} text */
export function readJson(text) {
  return JSON.parse(text, exactQuantities);
}

/** Calls the API; resolves to the JSON body of a 2xx answer, rejects with an ApiFailure. `tenant` (a slug or
 * an id) signs a platform key in to that tenant (`X-EAI-Tenant`). */
/**
 * @param {string} path
 * @param {{ method?: string, body?: unknown, key?: string | null, tenant?: string | null }} [options]
 * @returns {Promise<any>}
 */
export async function call(path, { method = "GET", body, key, tenant } = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json", "Accept-Language": lang() };
  if (key) headers.Authorization = `Bearer ${key}`;
  if (tenant) headers["X-EAI-Tenant"] = tenant;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  /** @type {Response | undefined} */
  let response;
  /** @type {any} */
  let data = null;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
    const text = await response.text();
    data = text ? readJson(text) : null;
  } catch (e) {
    if (!response) throw new ApiFailure({ code: "network" });
    // An answer that is not JSON: said below.
    data = null;
  }
  const requestId = response.headers.get("x-request-id");
  if (response.ok && data !== null) return data;
  const err = data && typeof data === "object" ? data.error : null;
  if (err && typeof err.code === "string") {
    throw new ApiFailure({
      status: response.status,
      code: err.code,
      messages: err.message_i18n || { en: err.message },
      details: Array.isArray(err.details) ? err.details : [],
      requestId: err.request_id || requestId,
    });
  }
  throw new ApiFailure({ status: response.status, code: `http_${response.status}`, requestId });
}
