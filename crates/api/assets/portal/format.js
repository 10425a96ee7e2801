// @ts-check
// Numbers, money and dates in the user's language. The API sends figures as decimal strings; they reach
// Intl.NumberFormat as strings (exact decimals, rounded half away from zero), never through a binary float.
// Sums are done on scaled BigInts.

import { lang } from "./i18n.js";

/** @typedef {string | number | bigint} DecimalLike a decimal as text (the API's), or a number or BigInt */
/** @typedef {{ units: bigint, scale: number }} Decimal value = units / 10^scale */

/** @type {Map<string, Intl.NumberFormat>} */
const formats = new Map();

/** @param {Intl.NumberFormatOptions} options */
function nf(options) {
  const key = lang() + JSON.stringify(options);
  let f = formats.get(key);
  if (!f) {
    f = new Intl.NumberFormat(lang(), options);
    formats.set(key, f);
  }
  return f;
}

/** A figure as Intl.NumberFormat takes it exactly: its decimal text (never through a float).
 * @param {DecimalLike} v @returns {`${number}`} */
function exact(v) {
  return /** @type {`${number}`} */ (String(v));
}

/** @type {Decimal} */
const ZERO = { units: 0n, scale: 0 };

const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** A decimal string as {units, scale} (value = units / 10^scale), or null.
 * @param {DecimalLike | null | undefined} text @returns {Decimal | null} */
export function parseDecimal(text) {
  const m = DECIMAL.exec(String(text).trim());
  if (!m || (m[2] === "" && (m[3] === undefined || m[3] === ""))) return null;
  const frac = m[3] ?? "";
  const units = BigInt((m[2] || "0") + frac) * (m[1] === "-" ? -1n : 1n);
  return { units, scale: frac.length };
}

/** @param {Decimal} d @param {number} scale */
function rescale(d, scale) {
  return d.units * 10n ** BigInt(scale - d.scale);
}

/** @param {bigint} units @param {number} scale */
function toText(units, scale) {
  const neg = units < 0n;
  let s = (neg ? -units : units).toString().padStart(scale + 1, "0");
  if (scale > 0) s = `${s.slice(0, -scale)}.${s.slice(-scale)}`;
  return (neg ? "-" : "") + s;
}

/** The exact sum of decimal strings (null and unparsable ones count as 0). */
/** @param {(DecimalLike | null | undefined)[]} values @returns {string} */
export function sum(values) {
  const ds = /** @type {Decimal[]} */ (values.map(parseDecimal).filter(Boolean));
  const scale = Math.max(0, ...ds.map((d) => d.scale));
  return toText(ds.reduce((acc, d) => acc + rescale(d, scale), 0n), scale);
}

/** `a / b` (decimal strings) to `dp` places, rounded half away from zero, as a decimal string; null when `b` is
 * zero or either is not a decimal. Exact: scaled BigInts, never a float.
 * @param {DecimalLike} a @param {DecimalLike} b @param {number} [dp] @returns {string | null} */
export function divide(a, b, dp = 6) {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  if (!x || !y || y.units === 0n) return null;
  let num = x.units * 10n ** BigInt(y.scale + dp);
  let den = y.units * 10n ** BigInt(x.scale);
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const neg = num < 0n;
  if (neg) num = -num;
  let q = num / den;
  if (2n * (num % den) >= den) q += 1n;
  return toText(neg ? -q : q, dp);
}

/** -1, 0 or 1 as a < b, a = b, a > b (both decimal strings; one that is not a decimal counts as 0).
 * @param {DecimalLike} a @param {DecimalLike} b @returns {-1 | 0 | 1} */
export function compare(a, b) {
  const x = parseDecimal(a) ?? ZERO;
  const y = parseDecimal(b) ?? ZERO;
  const scale = Math.max(x.scale, y.scale);
  const d = rescale(x, scale) - rescale(y, scale);
  return d < 0n ? -1 : d > 0n ? 1 : 0;
}

/** The digits a currency shows (EUR 2, JPY 0). @param {string} currency @returns {number} */
export function currencyDigits(currency) {
  try {
    return nf({ style: "currency", currency }).resolvedOptions().minimumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** An amount with its currency: `€1,234.56` in English, `1 234,56 €` in French. */
/** @param {DecimalLike | null | undefined} amount @param {string | null | undefined} currency */
export function money(amount, currency) {
  if (amount === null || amount === undefined || !currency) return "—";
  try {
    return nf({ style: "currency", currency }).format(exact(amount));
  } catch {
    return `${number(amount, 10)} ${currency}`;
  }
}

/** A unit price: the currency's digits at least, every given digit kept (`€2.105`). */
/** @param {DecimalLike | null | undefined} amount @param {string | null | undefined} currency */
export function price(amount, currency) {
  if (amount === null || amount === undefined || !currency) return "—";
  try {
    const min = currencyDigits(currency);
    return nf({ style: "currency", currency, minimumFractionDigits: min, maximumFractionDigits: Math.max(min, 10) }).format(exact(amount));
  } catch {
    return `${number(amount, 10)} ${currency}`;
  }
}

/** A quantity with at most `maxDp` decimals (rounded half away from zero). */
/** @param {DecimalLike | null | undefined} value @param {number} [maxDp] @param {number} [minDp] */
export function number(value, maxDp = 0, minDp = 0) {
  if (value === null || value === undefined || value === "") return "—";
  return nf({ minimumFractionDigits: minDp, maximumFractionDigits: maxDp }).format(exact(value));
}

/** A share (0..1) as a percentage with at most two decimals. */
/** @param {DecimalLike | null | undefined} share */
export function percent(share) {
  if (share === null || share === undefined) return "—";
  return nf({ style: "percent", maximumFractionDigits: 2 }).format(exact(share));
}

/** @param {string} iso */
function utc(iso) {
  const s = String(iso);
  return new Date(s.length === 10 ? `${s}T00:00:00Z` : s);
}

/** @type {Map<string, Intl.DateTimeFormat>} */
const dates = new Map();
/** @param {Intl.DateTimeFormatOptions} options */
function df(options) {
  const key = lang() + JSON.stringify(options);
  let f = dates.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat(lang(), { timeZone: "UTC", ...options });
    dates.set(key, f);
  }
  return f;
}

/** `3 Oct 2026` / `3 oct. 2026` (UTC). */
/** @param {string} iso */
export function date(iso) {
  const d = utc(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : df({ dateStyle: "medium" }).format(d);
}

/** `3 Oct 2026, 10:40` (UTC). */
/** @param {string} iso */
export function dateTime(iso) {
  const d = utc(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : df({ dateStyle: "medium", timeStyle: "short" }).format(d);
}

/** `November 2026` / `novembre 2026` from `YYYY-MM` (or a date in that month). */
/** @param {string} iso */
export function month(iso) {
  const d = utc(/^\d{4}-\d{2}$/.test(String(iso)) ? `${iso}-01` : iso);
  return Number.isNaN(d.getTime()) ? String(iso) : df({ month: "long", year: "numeric" }).format(d);
}

/** `3 Oct` / `3 oct.` for chart axes. */
/** @param {string} iso */
export function shortDay(iso) {
  const d = utc(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : df({ day: "numeric", month: "short" }).format(d);
}

/** Today's date in UTC as `YYYY-MM-DD`, shifted by `days`. */
/** @param {number} [days] @param {Date} [now] */
export function utcDay(days = 0, now = new Date()) {
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + days));
  return d.toISOString().slice(0, 10);
}

/** The UTC days `[from, to)` touches, as `YYYY-MM-DD` (at most 400). */
/** @param {string} fromIso @param {string} toIso @returns {string[]} */
export function daysOf(fromIso, toIso) {
  /** @type {string[]} */
  const out = [];
  const start = utc(fromIso);
  const end = utc(toIso);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) return out;
  let d = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate()));
  while (d < end && out.length < 400) {
    out.push(d.toISOString().slice(0, 10));
    d = new Date(d.getTime() + 86_400_000);
  }
  return out;
}
