import type { Money } from "./types.js";

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * The rows' `cost` summed per currency, exactly (the decimal strings added as integers, never as floats), sorted
 * by currency; each amount has as many decimal places as the most precise amount summed (`"5.19"`). No row, or
 * no cost: `[]`. For the rows of {@link FinOpsGpu.usage}, or anything with a `cost: Money[]`.
 *
 * @example
 * const { rows } = await client.finops.gpu.usage({ from: "2026-10-01", to: "2026-10-31", groupBy: ["pod"] });
 * totalCost(rows); // [{ amount: "5.19", currency: "EUR" }]: the allocation's cost of the deployments shown
 */
export function totalCost(rows: readonly { readonly cost: readonly Money[] }[]): Money[] {
  const by = new Map<string, { units: bigint; scale: number }>();
  for (const row of rows) {
    for (const { amount, currency } of row.cost) {
      const m = DECIMAL.exec(amount);
      if (!m) throw new RangeError(`totalCost: not a decimal string: ${JSON.stringify(amount)}`);
      const frac = m[3] ?? "";
      const units = BigInt((m[2] ?? "0") + frac) * (m[1] === "-" ? -1n : 1n);
      const acc = by.get(currency) ?? { units: 0n, scale: 0 };
      const scale = Math.max(acc.scale, frac.length);
      by.set(currency, {
        units: acc.units * 10n ** BigInt(scale - acc.scale) + units * 10n ** BigInt(scale - frac.length),
        scale,
      });
    }
  }
  return [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([currency, { units, scale }]) => ({ amount: decimal(units, scale), currency }));
}

/** `units` x 10^-scale as a decimal string. */
function decimal(units: bigint, scale: number): string {
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString().padStart(scale + 1, "0");
  const int = digits.slice(0, digits.length - scale);
  return `${neg ? "-" : ""}${int}${scale > 0 ? `.${digits.slice(digits.length - scale)}` : ""}`;
}
