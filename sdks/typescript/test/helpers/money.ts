/** Exact decimal arithmetic on the API's decimal strings, with BigInt: never a float. */

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** Decimal places of a decimal string. */
export function places(s: string): number {
  const m = DECIMAL.exec(s);
  if (!m) throw new Error(`not a decimal string: ${JSON.stringify(s)}`);
  return m[3]?.length ?? 0;
}

/** The decimal string as an integer count of 10^-scale units (exact; throws if it has more places). */
export function toUnits(s: string, scale: number): bigint {
  const m = DECIMAL.exec(s);
  if (!m) throw new Error(`not a decimal string: ${JSON.stringify(s)}`);
  const frac = m[3] ?? "";
  if (frac.length > scale) throw new Error(`${s} has more than ${scale} decimal places`);
  const v = BigInt((m[2] ?? "0") + frac.padEnd(scale, "0"));
  return m[1] === "-" ? -v : v;
}

/** Sum of decimal strings, as a decimal string with the largest scale among them. */
export function sum(values: readonly string[]): string {
  const scale = Math.max(0, ...values.map(places));
  const total = values.reduce((acc, v) => acc + toUnits(v, scale), 0n);
  return fromUnits(total, scale);
}

export function fromUnits(v: bigint, scale: number): string {
  const neg = v < 0n;
  const digits = (neg ? -v : v).toString().padStart(scale + 1, "0");
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale);
  return `${neg ? "-" : ""}${int}${scale > 0 ? `.${frac}` : ""}`;
}

/** Whether two decimal strings are the same number (`"1.5"` equals `"1.50"`). */
export function equal(a: string, b: string): boolean {
  const scale = Math.max(places(a), places(b));
  return toUnits(a, scale) === toUnits(b, scale);
}
