// @ts-check
// The daily cost per deployment as hand-drawn SVG stacked bars (one chart per currency), with a title and a
// description for assistive technologies, a legend, and the same figures as a table.
// Floats only place the bars; every figure shown is formatted from the API's decimal strings.

import { t } from "./i18n.js";
import * as fmt from "./format.js";
import { h, s } from "./dom.js";

/** @typedef {import("./store.js").Json} Json */
/** A colour for an id (a deployment, a party): the same in every chart. @typedef {(id: string) => string} ColorOf */
/** @typedef {{ date: string, deployment_id: string, cost: { amount: string, currency: string } }} DailyCost */
/** @typedef {{ day: string, deployment: string, currency: string, rate: string }} DailyRate */

/** Okabe-Ito colours (distinguishable with colour blindness), darkened where white text would fail. */
export const PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#6B6B6B", "#9C8A00"];

let uid = 0;

/** A small coloured square, as SVG (no inline style: the page's CSP forbids it). @param {string} color */
export function swatch(color) {
  return s("svg", { class: "swatch", viewBox: "0 0 12 12", width: 12, height: 12, "aria-hidden": "true", focusable: "false" },
    s("rect", { width: 12, height: 12, rx: 2, fill: color }));
}

/** The horizontal grid lines and their money labels, from `left` to `end`.
 * @param {number[]} ys @param {(v: number) => number} y @param {number} left @param {number} end @param {string} currency */
function grid(ys, y, left, end, currency) {
  const g = s("g", { class: "grid", "aria-hidden": "true" });
  for (const v of ys) {
    g.append(s("line", { x1: left, x2: end, y1: y(v), y2: y(v) }));
    g.append(s("text", { x: left - 8, y: y(v) + 4, "text-anchor": "end" }, fmt.money(String(v), currency)));
  }
  return g;
}

/**
 * The frame of a stacked-bar chart of `n` bars up to `max` in `currency`, `H` high: the SVG with its title and
 * description, the grid, and where bar `i` goes (at least `minBar` wide) (`x(i)` its left edge, `mid(i)` its centre, `barW`), `y(v)` the
 * height of a value and `axisY` the baseline of the axis labels. `finish()` draws the baseline over the bars.
 * @param {string} id @param {string} title @param {string} desc @param {number} n @param {number} max
 * @param {string} currency @param {number} H @param {number} minBar
 */
function barFrame(id, title, desc, n, max, currency, H, minBar) {
  const W = 820;
  const left = 76;
  const right = 12;
  const top = 14;
  const bottom = 40;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const ys = ticks(max);
  const yMax = ys[ys.length - 1] || 1;
  const y = (/** @type {number} */ v) => top + plotH - (v / yMax) * plotH;
  const band = plotW / Math.max(n, 1);
  const barW = Math.max(minBar, Math.min(36, band * 0.72));
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${id}-title ${id}-desc`, preserveAspectRatio: "xMidYMid meet" });
  svg.append(s("title", { id: `${id}-title` }, title));
  svg.append(s("desc", { id: `${id}-desc` }, desc));
  svg.append(grid(ys, y, left, W - right, currency));
  return {
    svg, y, barW,
    x: (/** @type {number} */ i) => left + band * i + (band - barW) / 2,
    mid: (/** @type {number} */ i) => left + band * i + band / 2,
    axisY: H - bottom + 18,
    finish: () => svg.append(s("line", { class: "baseline", x1: left, x2: W - right, y1: y(0), y2: y(0), "aria-hidden": "true" })),
  };
}

/** Round tick values from 0 to at least `max`. @param {number} max @returns {number[]} */
function ticks(max) {
  if (!(max > 0)) return [0, 1];
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((x) => x >= raw) ?? 10 * mag;
  const out = [];
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/**
 * One figure per currency of `daily` ({date, deployment_id, cost: {amount, currency}}) over the days of
 * [from, to). `colorOf(deploymentId)` gives each deployment its colour (the same in every chart).
 * @param {DailyCost[]} daily @param {string} from @param {string} to @param {ColorOf} colorOf @returns {HTMLElement[]}
 */
export function renderCharts(daily, from, to, colorOf) {
  const currencies = [...new Set(daily.map((d) => d.cost.currency))].sort();
  if (currencies.length === 0) return [h("p", { class: "note" }, t("chart.none"))];
  return currencies.map((c) => renderChart(daily.filter((d) => d.cost.currency === c), c, from, to, colorOf, currencies.length > 1));
}

/** @param {DailyCost[]} rows @param {string} currency @param {string} from @param {string} to @param {ColorOf} colorOf
 * @param {boolean} several */
function renderChart(rows, currency, from, to, colorOf, several) {
  const id = `chart-${++uid}`;
  const days = fmt.daysOf(from, to);
  for (const r of rows) if (!days.includes(r.date)) days.push(r.date);
  days.sort();
  // Deployments by total cost, largest at the bottom of each bar.
  const totals = new Map();
  for (const r of rows) totals.set(r.deployment_id, fmt.sum([totals.get(r.deployment_id) ?? "0", r.cost.amount]));
  const deployments = [...totals.keys()].sort((a, b) => fmt.compare(totals.get(b), totals.get(a)) || a.localeCompare(b));
  const cell = new Map(rows.map((r) => [`${r.date}\u0000${r.deployment_id}`, r.cost.amount]));
  const dayTotal = new Map(days.map((d) => [d, fmt.sum(deployments.map((dep) => cell.get(`${d}\u0000${dep}`) ?? "0"))]));
  const max = Math.max(0, ...[...dayTotal.values()].map(Number));
  const maxDay = days.find((d) => Number(dayTotal.get(d)) === max);

  const title = several ? t("chart.titleCurrency", { currency }) : t("chart.title");
  const desc = t("chart.desc", { max: maxDay ? `${fmt.date(maxDay)}, ${fmt.money(dayTotal.get(maxDay), currency)}` : fmt.money("0", currency) });
  const f = barFrame(id, title, desc, days.length, max, currency, 300, 2);
  const { svg, y, barW } = f;

  const labelEvery = Math.max(1, Math.ceil(days.length / 10));
  const bars = s("g", { class: "bars" });
  days.forEach((d, i) => {
    const x = f.x(i);
    let acc = 0;
    for (const dep of deployments) {
      const amount = cell.get(`${d}\u0000${dep}`);
      if (!amount || Number(amount) === 0) continue;
      const v = Number(amount);
      const y0 = y(acc);
      const y1 = y(acc + v);
      acc += v;
      bars.append(s("rect", {
        x: x.toFixed(2), y: y1.toFixed(2), width: barW.toFixed(2), height: Math.max(0.5, y0 - y1).toFixed(2),
        fill: colorOf(dep), "data-date": d, "data-deployment": dep, "data-amount": amount,
      }, s("title", {}, `${fmt.date(d)} · ${dep}: ${fmt.money(amount, currency)}`)));
    }
    if (i % labelEvery === 0) {
      bars.append(s("text", { class: "axis", x: f.mid(i).toFixed(2), y: f.axisY, "text-anchor": "middle", "aria-hidden": "true" }, fmt.shortDay(d)));
    }
  });
  svg.append(bars);
  f.finish();

  const legend = h("ul", { class: "legend", "aria-label": t("chart.legend") },
    deployments.map((dep) => h("li", {}, swatch(colorOf(dep)), h("span", {}, dep), " ", h("span", { class: "muted" }, fmt.money(totals.get(dep), currency)))));

  const table = h("table", { class: "data chart-table" },
    h("caption", { class: "visually-hidden" }, title),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, t("col.date")),
      deployments.map((dep) => h("th", { scope: "col", class: "num" }, dep)),
      h("th", { scope: "col", class: "num" }, t("col.total")))),
    h("tbody", {}, days.map((d) => h("tr", { "data-date": d },
      h("th", { scope: "row" }, fmt.date(d)),
      deployments.map((dep) => {
        const a = cell.get(`${d}\u0000${dep}`);
        return h("td", { class: "num", "data-value": a ?? "0" }, a ? fmt.money(a, currency) : "—");
      }),
      h("td", { class: "num", "data-col": "total", "data-value": dayTotal.get(d) }, fmt.money(dayTotal.get(d), currency))))));

  return h("figure", { class: "chart-figure", "data-currency": currency },
    h("figcaption", { id: `${id}-caption` }, h("h3", {}, title)),
    h("div", { class: "chart-scroll" }, svg),
    legend,
    h("details", { class: "chart-data" },
      h("summary", {}, t("chart.table")),
      h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": title }, table)));
}

/**
 * The cost per 1M tokens per deployment and day, from the allocation series (`step=day`): one figure per
 * currency, one line per deployment, a point per day with tokens (a day without tokens has no rate: the line
 * breaks). The rates are the API's decimal strings; floats only place the points.
 * @param {Json} series @param {ColorOf} colorOf @returns {HTMLElement[]}
 */
export function renderRateCharts(series, colorOf) {
  /** @type {DailyRate[]} */
  const rows = [];
  for (const step of series.steps) {
    const day = step.from.slice(0, 10);
    for (const d of step.deployments) {
      if (d.currency && d.cost_per_mtok !== null) rows.push({ day, deployment: d.deployment_id, currency: d.currency, rate: d.cost_per_mtok });
    }
  }
  const currencies = [...new Set(rows.map((r) => r.currency))].sort();
  if (currencies.length === 0) return [h("p", { class: "note" }, t("chart.rateNone"))];
  /** @type {string[]} */
  const days = series.steps.map((/** @type {Json} */ st) => st.from.slice(0, 10));
  return currencies.map((c) => renderRateChart(rows.filter((r) => r.currency === c), c, days, colorOf, currencies.length > 1));
}

/** @param {DailyRate[]} rows @param {string} currency @param {string[]} days @param {ColorOf} colorOf @param {boolean} several */
function renderRateChart(rows, currency, days, colorOf, several) {
  const id = `chart-${++uid}`;
  const deployments = [...new Set(rows.map((r) => r.deployment))].sort();
  const cell = new Map(rows.map((r) => [`${r.day}\u0000${r.deployment}`, r.rate]));
  const highest = rows.reduce((/** @type {DailyRate | null} */ m, r) => (!m || fmt.compare(r.rate, m.rate) > 0 ? r : m), null);
  const max = highest ? Number(highest.rate) : 0;

  const W = 820;
  const H = 300;
  const left = 76;
  const right = 12;
  const top = 14;
  const bottom = 40;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const ys = ticks(max);
  const yMax = ys[ys.length - 1] || 1;
  const y = (/** @type {number} */ v) => top + plotH - (v / yMax) * plotH;
  const band = plotW / Math.max(days.length, 1);
  const x = (/** @type {number} */ i) => left + band * i + band / 2;

  const title = several ? t("chart.rateTitleCurrency", { currency }) : t("chart.rateTitle");
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${id}-title ${id}-desc`, preserveAspectRatio: "xMidYMid meet" });
  svg.append(s("title", { id: `${id}-title` }, title));
  svg.append(s("desc", { id: `${id}-desc` }, t("chart.rateDesc", {
    max: highest ? `${fmt.date(highest.day)}, ${highest.deployment}, ${fmt.price(highest.rate, currency)}` : "—",
  })));
  svg.append(grid(ys, y, left, W - right, currency));
  const lines = s("g", { class: "lines" });
  for (const dep of deployments) {
    let path = "";
    let open = false;
    days.forEach((d, i) => {
      const rate = cell.get(`${d}\u0000${dep}`);
      if (rate === undefined) {
        open = false;
        return;
      }
      path += `${open ? "L" : "M"}${x(i).toFixed(2)} ${y(Number(rate)).toFixed(2)} `;
      open = true;
      lines.append(s("circle", { cx: x(i).toFixed(2), cy: y(Number(rate)).toFixed(2), r: 3, fill: colorOf(dep), "data-date": d, "data-deployment": dep, "data-rate": rate },
        s("title", {}, `${fmt.date(d)} · ${dep}: ${fmt.price(rate, currency)}`)));
    });
    if (path) lines.prepend(s("path", { d: path.trim(), fill: "none", stroke: colorOf(dep), "stroke-width": 2, "data-deployment": dep }));
  }
  svg.append(lines);
  const labelEvery = Math.max(1, Math.ceil(days.length / 10));
  days.forEach((d, i) => {
    if (i % labelEvery === 0) svg.append(s("text", { class: "axis", x: x(i).toFixed(2), y: H - bottom + 18, "text-anchor": "middle", "aria-hidden": "true" }, fmt.shortDay(d)));
  });
  svg.append(s("line", { class: "baseline", x1: left, x2: W - right, y1: y(0), y2: y(0), "aria-hidden": "true" }));

  const legend = h("ul", { class: "legend", "aria-label": t("chart.legend") },
    deployments.map((dep) => h("li", {}, swatch(colorOf(dep)), h("span", {}, dep))));
  const table = h("table", { class: "data chart-table" },
    h("caption", { class: "visually-hidden" }, title),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, t("col.date")),
      deployments.map((dep) => h("th", { scope: "col", class: "num" }, dep)))),
    h("tbody", {}, days.map((d) => h("tr", { "data-date": d },
      h("th", { scope: "row" }, fmt.date(d)),
      deployments.map((dep) => {
        const r = cell.get(`${d}\u0000${dep}`);
        return h("td", { class: "num", "data-value": r ?? "" }, r ? fmt.price(r, currency) : "—");
      })))));
  return h("figure", { class: "chart-figure", "data-currency": currency, "data-mode": "rate" },
    h("figcaption", { id: `${id}-caption` }, h("h3", {}, title)),
    h("div", { class: "chart-scroll" }, svg),
    legend,
    h("details", { class: "chart-data" },
      h("summary", {}, t("chart.table")),
      h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": title }, table)));
}

/**
 * The explanation of a deployment's cost (GET /v1/finops/gpu/allocation/explain) as stacked bars: one bar per
 * allocation bucket (an hour), one segment per party (each tenant's exact part, the other tenants, idle), in the
 * currency `currency`. `labelOf(key)` names a party, `colorOf(key)` colours it; keys are tenant ids, `others` and
 * `idle`. Exact amounts are summed as decimals for the figures; floats only place the bars.
 * @param {Json[]} buckets @param {string} currency @param {(key: string) => string | null} labelOf @param {ColorOf} colorOf
 */
export function renderExplainChart(buckets, currency, labelOf, colorOf) {
  const id = `chart-${++uid}`;
  /** @type {{ start: string, key: string, amount: string }[]} */
  const rows = [];
  for (const b of buckets) {
    for (const p of b.priced.filter((/** @type {Json} */ x) => x.currency === currency)) {
      const add = (/** @type {string} */ key, /** @type {string} */ amount) => rows.push({ start: b.start, key, amount });
      if (b.owner) add(b.owner.tenant_id ?? "others", p.cost);
      else for (const x of p.parties) add(x.party.tenant_id ?? "others", x.cost);
      if (!b.owner && fmt.compare(p.idle, "0") > 0) add("idle", p.idle);
    }
  }
  const starts = [...new Set(rows.map((r) => r.start))].sort();
  const totals = new Map();
  for (const r of rows) totals.set(r.key, fmt.sum([totals.get(r.key) ?? "0", r.amount]));
  const keys = [...totals.keys()].sort((a, b) => Number(a === "idle") - Number(b === "idle") || fmt.compare(totals.get(b), totals.get(a)));
  const cell = new Map();
  for (const r of rows) cell.set(`${r.start}\u0000${r.key}`, fmt.sum([cell.get(`${r.start}\u0000${r.key}`) ?? "0", r.amount]));
  const bucketTotal = new Map(starts.map((st) => [st, fmt.sum(keys.map((k) => cell.get(`${st}\u0000${k}`) ?? "0"))]));
  const max = Math.max(0, ...[...bucketTotal.values()].map(Number));

  const title = t("explain.chart", { currency });
  const f = barFrame(id, title, t("explain.chartDesc", { n: fmt.number(starts.length) }), starts.length, max, currency, 260, 1);
  const { svg, y, barW } = f;
  const labelEvery = Math.max(1, Math.ceil(starts.length / 8));
  const bars = s("g", { class: "bars" });
  starts.forEach((st, i) => {
    const x = f.x(i);
    let acc = 0;
    for (const k of keys) {
      const amount = cell.get(`${st}\u0000${k}`);
      if (!amount || Number(amount) <= 0) continue;
      const v = Number(amount);
      const y0 = y(acc);
      const y1 = y(acc + v);
      acc += v;
      bars.append(s("rect", {
        x: x.toFixed(2), y: y1.toFixed(2), width: barW.toFixed(2), height: Math.max(0.5, y0 - y1).toFixed(2),
        fill: colorOf(k), "data-start": st, "data-party": k, "data-amount": amount,
      }, s("title", {}, `${fmt.dateTime(st)} · ${labelOf(k)}: ${fmt.price(amount, currency)}`)));
    }
    if (i % labelEvery === 0) {
      bars.append(s("text", { class: "axis", x: f.mid(i).toFixed(2), y: f.axisY, "text-anchor": "middle", "aria-hidden": "true" }, `${fmt.shortDay(st)} ${st.slice(11, 16)}`));
    }
  });
  svg.append(bars);
  f.finish();
  const legend = h("ul", { class: "legend", "aria-label": t("explain.legend") },
    keys.map((k) => h("li", {}, swatch(colorOf(k)), h("span", {}, labelOf(k)), " ", h("span", { class: "muted" }, fmt.price(totals.get(k), currency)))));
  return h("figure", { class: "chart-figure", id: "explain-chart", "data-currency": currency },
    h("figcaption", {}, h("h3", {}, title)),
    h("div", { class: "chart-scroll" }, svg),
    legend);
}
