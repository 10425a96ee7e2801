// @ts-check
// What to do about the GPUs (SPEC §13): the period's recommendations with their monthly savings, the expected
// spend of the month of the period's end per tenant (its low-high band drawn) with the day each budget runs out,
// and the period's hours far from their deployment's baseline. The figures stay the API's decimal text: sums and
// the band's proportions are exact (format.js), never floats. The pure helpers are exported for
// portal-tests/advice.test.mjs.

import { t, lang } from "../i18n.js";
import * as fmt from "../format.js";
import { h, s, ICON_EMPTY } from "../dom.js";
import { state, update } from "../store.js";
import { api, num, badge, tableWrap, loading, emptyState, errorPanel, tenantCell, tenantLabel } from "./common.js";

/** @typedef {import("../store.js").Json} Json */
/** @typedef {import("../store.js").State} State */
/** @typedef {import("../store.js").Answer} Answer */
/** @typedef {"recommendations" | "forecast" | "anomalies"} Part */

/** The month the forecast is of: that of the period's end, else the current one (UTC), as `YYYY-MM`.
 * @param {string | null | undefined} to @param {Date} [now] */
export function forecastMonth(to, now = new Date()) {
  return /^\d{4}-(0[1-9]|1[0-2])/.test(to ?? "") ? String(to).slice(0, 7) : fmt.utcDay(0, now).slice(0, 7);
}

/** Where a part is read from, for the period asked. @param {Part} part */
function pathOf(part) {
  const { from, to } = state.period;
  const range = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
  if (part === "recommendations") return `/v1/finops/gpu/recommendations?${range}`;
  if (part === "forecast") return `/v1/finops/gpu/forecast?period=${forecastMonth(to)}`;
  return `/v1/finops/gpu/anomalies?${range}`;
}

/** @param {Part} part @param {Answer} answer */
function setPart(part, answer) {
  update(/** @type {Partial<State>} */ ({ [part]: answer }));
}

/** @param {Part} part @param {number} seq */
async function fetchPart(part, seq) {
  try {
    const data = await api(pathOf(part));
    if (seq !== state[part].seq) return;
    setPart(part, { status: "ok", data, error: null, seq });
  } catch (e) {
    if (seq !== state[part].seq) return;
    setPart(part, { status: "error", data: null, error: e, seq });
  }
}

/**
 * Loads the three answers for the period and the tenant viewed as; each shows as loading at once and is drawn as
 * it comes. The anomalies are a plain read; the recommendations then the forecast wait for `after` (the
 * allocation) and for each other: each is an allocation computation, and the server bounds how many run at once.
 * @param {Promise<unknown>} [after]
 */
export async function loadAdvice(after = Promise.resolve()) {
  if (state.period.error) return;
  /** @type {Part[]} */
  const parts = ["anomalies", "recommendations", "forecast"];
  const seqs = new Map(parts.map((part) => [part, state[part].seq + 1]));
  /** @type {Partial<State>} */
  const patch = {};
  for (const part of parts) patch[part] = { ...state[part], seq: seqs.get(part) ?? 0, status: "loading" };
  update(patch);
  const anomalies = fetchPart("anomalies", state.anomalies.seq);
  await after.catch(() => {});
  for (const part of /** @type {Part[]} */ (["recommendations", "forecast"])) {
    // Skipped when asked again since (another period, or its Retry).
    if (state[part].seq === seqs.get(part)) await fetchPart(part, state[part].seq);
  }
  await anomalies;
}

/** One part again (its Retry button). @param {Part} part */
function reload(part) {
  const seq = state[part].seq + 1;
  setPart(part, { ...state[part], seq, status: "loading" });
  fetchPart(part, seq);
}

/** A part's loading, not-yet-asked or error state into `el`; true when its data is there to draw.
 * @param {HTMLElement} el @param {Part} part @param {string} loadingText @param {string} errorTitle */
function drawState(el, part, loadingText, errorTitle) {
  const a = state[part];
  el.setAttribute("aria-busy", a.status === "loading" ? "true" : "false");
  if (a.status === "error") {
    el.replaceChildren(errorPanel(errorTitle, a.error, () => reload(part), `${part}-error`));
    return false;
  }
  if (a.status !== "ok") {
    el.replaceChildren(loading(loadingText, `${part}-loading`));
    return false;
  }
  return true;
}

/** `key.one` or `key.other` as the language counts `n` (a count, never money).
 * @param {string} key @param {number} n @param {Record<string, unknown>} params */
function plural(key, n, params) {
  return t(`${key}.${new Intl.PluralRules(lang()).select(n) === "one" ? "one" : "other"}`, params);
}

// ------------------------------------------------------------------ recommendations

/** A recommendation's kind in words. @param {string} kind */
export function kindLabel(kind) {
  const key = `advice.kind.${kind}`;
  return t(key) === key ? kind : t(key);
}

/** What to do, in a few words: "Remove 4 of 6 GPUs", "2 GPUs instead of 4", "MIG 2g.20gb", "A 0.20 share of a
 * GPU", "Add a policy". @param {Json} x a Recommendation */
export function actionPhrase(x) {
  const n = Number(x.gpus);
  const params = { n: fmt.number(x.gpus), of: fmt.number(x.current_gpus), profile: x.mig_profile,
    fraction: x.gpu_fraction === null ? "—" : fmt.number(x.gpu_fraction, 2, 2) };
  switch (x.action) {
    case "remove_gpus": return plural("advice.do.remove", Number(x.current_gpus), params);
    case "fewer_gpus": return plural("advice.do.fewer", n, params);
    case "mig_profile": return plural("advice.do.mig", n, params);
    case "share_gpu": return plural("advice.do.share", n, params);
    case "add_policy": return t("advice.do.policy");
    default: return x.message;
  }
}

/** The evidence in short, one phrase each: utilization, then what the kind rests on (idle hours; p95, the peak
 * of busy GPUs and the memory; unpriced GPU-hours). @param {Json} x a Recommendation @returns {string[]} */
export function evidenceParts(x) {
  const e = x.evidence;
  if (x.kind === "unpriced") {
    return [t("advice.ev.unpriced", { hours: fmt.number(e.unpriced_gpu_hours, 2) }), t("advice.ev.hours", { hours: fmt.number(e.hours) })];
  }
  const out = [t("advice.ev.utilization", { pct: fmt.percent(e.utilization) })];
  if (x.kind === "idle_gpus") {
    // Whole hours, counted: integers well inside a float's exact range.
    const idle = e.idle_gpus.reduce((/** @type {number} */ n, /** @type {Json} */ g) => n + g.idle_hours, 0);
    const hours = e.idle_gpus.reduce((/** @type {number} */ n, /** @type {Json} */ g) => n + g.hours, 0);
    out.push(t("advice.ev.idle", { idle: fmt.number(idle), hours: fmt.number(hours) }));
    return out;
  }
  out.push(t("advice.ev.p95", { pct: fmt.percent(e.utilization_p95) }));
  out.push(t("advice.ev.peak", { n: fmt.number(e.peak_busy_gpus, 2) }));
  if (e.memory_peak_gb !== null && e.profile_memory_gb !== null) {
    out.push(t("advice.ev.memoryOf", { peak: fmt.number(e.memory_peak_gb, 1), profile: fmt.number(e.profile_memory_gb, 1) }));
  } else if (e.memory_peak_gb !== null) {
    out.push(t("advice.ev.memory", { peak: fmt.number(e.memory_peak_gb, 1) }));
  }
  return out;
}

/** The monthly savings summed per currency (exact), currencies in order; unpriced items (no savings) left out.
 * @param {Json[]} items Recommendations @returns {{ currency: string, amount: string }[]} */
export function savingsTotals(items) {
  /** @type {Map<string, string[]>} */
  const by = new Map();
  for (const x of items) {
    const m = x.monthly_savings;
    if (!m) continue;
    by.set(m.currency, [...(by.get(m.currency) ?? []), m.amount]);
  }
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([currency, amounts]) => ({ currency, amount: fmt.sum(amounts) }));
}

/** The recommendations' section body, into `#recs-body`. @param {HTMLElement} el */
export function renderRecommendations(el) {
  if (!drawState(el, "recommendations", t("advice.recs.loading"), t("error.recommendations"))) return;
  const d = state.recommendations.data;
  const th = d.thresholds;
  const note = h("p", { class: "note" }, t("advice.recs.note", {
    idle: fmt.percent(th.idle_utilization), share: fmt.percent(th.idle_share), low: fmt.percent(th.low_utilization),
  }));
  if (d.items.length === 0) {
    el.replaceChildren(emptyState("empty-recommendations", ICON_EMPTY, t("advice.recs.empty"), t("advice.recs.emptyHint")), note);
    return;
  }
  const totals = savingsTotals(d.items);
  const unpriced = d.items.filter((/** @type {Json} */ x) => x.kind === "unpriced").length;
  const tiles = totals.map((x) => h("div", { class: "tile ok", "data-tile": "monthly_savings", "data-currency": x.currency, "data-value": x.amount },
    h("dt", {}, t("advice.recs.total", { currency: x.currency })), h("dd", {}, fmt.money(x.amount, x.currency))));
  if (unpriced > 0) {
    tiles.push(h("div", { class: "tile warn", "data-tile": "unpriced" }, h("dt", {}, t("advice.recs.unpriced")), h("dd", {}, fmt.number(unpriced))));
  }
  const cols = [["col.kind", false], ["col.deployment", false], ["col.action", false], ["col.evidence", false],
    ["col.periodCost", true], ["col.monthlySavings", true]];
  const tone = /** @type {Record<string, string>} */ ({ idle_gpus: "warn", low_utilization: "info", unpriced: "muted" });
  const rows = d.items.map((/** @type {Json} */ x) => {
    const cur = x.monthly_savings?.currency ?? x.cost?.currency ?? null;
    return h("tr", { "data-kind": x.kind, "data-deployment": x.deployment_id, "data-action": x.action, title: x.message },
      h("td", {}, badge(kindLabel(x.kind), tone[x.kind] ?? "muted")),
      h("th", { scope: "row", class: "id" }, h("span", { class: "mono" }, x.deployment_id),
        h("span", { class: "sub muted" }, plural("advice.gpusOf", Number(x.current_gpus), { n: fmt.number(x.current_gpus), model: x.model }))),
      h("td", { class: "action", "data-col": "action" }, actionPhrase(x)),
      h("td", { class: "wrap", "data-col": "evidence" }, h("ul", { class: "evidence" }, evidenceParts(x).map((p) => h("li", {}, p)))),
      num(x.cost?.amount, x.cost ? fmt.money(x.cost.amount, x.cost.currency) : "—", "cost"),
      x.monthly_savings
        ? num(x.monthly_savings.amount, h("span", { class: "strong" }, fmt.money(x.monthly_savings.amount, cur)), "monthly_savings",
          { title: x.savings ? t("advice.recs.periodSavings", { amount: fmt.money(x.savings.amount, x.savings.currency) }) : undefined })
        : num("", "—", "monthly_savings", { title: t("advice.recs.noSavings") }));
  });
  el.replaceChildren(
    h("dl", { class: "tiles", id: "recs-totals", "aria-label": t("advice.recs.totals") }, tiles),
    tableWrap("recs-title", h("table", { class: "data", id: "recs-table" },
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
      h("tbody", {}, rows))),
    note);
}

// ------------------------------------------------------------------ forecast

/** The widest figure of each currency among the totals (their `high`, at least their `expected`): the scale its
 * bars share. @param {Json[]} totals ForecastTotals @returns {Map<string, string>} */
export function bandScales(totals) {
  /** @type {Map<string, string>} */
  const m = new Map();
  for (const x of totals) {
    const cur = x.expected.currency;
    for (const v of [x.high.amount, x.expected.amount, x.spent.amount]) {
      const best = m.get(cur);
      if (best === undefined || fmt.compare(v, best) > 0) m.set(cur, v);
    }
  }
  return m;
}

/** Where a total's figures fall on a bar whose full length is `scale`: each a decimal share of it (0 to 1, four
 * places, exact), and `width` the band's (high - low).
 * @param {Json} x a ForecastTotal (or ForecastLine) @param {string} scale
 * @returns {{ spent: string, low: string, expected: string, high: string, width: string }} */
export function bandFigures(x, scale) {
  const at = (/** @type {string} */ v) => {
    const share = fmt.divide(v, scale, 4) ?? "0.0000";
    return fmt.compare(share, "1") > 0 ? "1.0000" : fmt.compare(share, "0") < 0 ? "0.0000" : share;
  };
  const low = at(x.low.amount);
  const high = at(x.high.amount);
  return { spent: at(x.spent.amount), low, expected: at(x.expected.amount), high, width: fmt.sum([high, `-${low}`]) };
}

/** A total's figures in words (the bar's text alternative). @param {Json} x */
export function bandText(x) {
  const cur = x.expected.currency;
  return t("advice.fc.bandText", {
    spent: fmt.money(x.spent.amount, cur), expected: fmt.money(x.expected.amount, cur),
    low: fmt.money(x.low.amount, cur), high: fmt.money(x.high.amount, cur),
  });
}

/** The bar: the spent part solid, the band shaded, the expected figure marked. @param {Json} x @param {string} scale */
function bandBar(x, scale) {
  const f = bandFigures(x, scale);
  const who = x.tenant_id === null ? t("advice.fc.unallocated") : tenantLabel(x.tenant_id);
  return s("svg", { class: "band", viewBox: "0 0 1 10", preserveAspectRatio: "none", role: "img", "aria-label": `${who}: ${bandText(x)}`,
    "data-spent": f.spent, "data-low": f.low, "data-expected": f.expected, "data-high": f.high },
    s("rect", { class: "band-track", x: 0, y: 3, width: 1, height: 4 }),
    s("rect", { class: "band-range", x: f.low, y: 1, width: f.width, height: 8 }),
    s("rect", { class: "band-spent", x: 0, y: 3, width: f.spent, height: 4 }),
    s("line", { class: "band-expected", x1: f.expected, x2: f.expected, y1: 0, y2: 10 }));
}

/** What a budget's forecast says: exceeded already, expected to exceed on a day (`inside` the month: highlighted),
 * may exceed at the band's high, or within its limit.
 * @param {Json} b a BudgetForecast @param {Json} f the Forecast
 * @returns {{ text: string, earliest: string | null, inside: boolean }} */
export function budgetOutlook(b, f) {
  const first = String(f.from).slice(0, 10);
  const end = String(f.to).slice(0, 10);
  const inMonth = (/** @type {string | null} */ d) => d !== null && d >= first && d < end;
  const earliest = b.exhausted_on_high && b.exhausted_on_high !== b.exhausted_on
    ? t("advice.fc.earliest", { day: fmt.shortDay(b.exhausted_on_high) }) : null;
  if (fmt.compare(b.spent.amount, b.limit.amount) >= 0) return { text: t("advice.fc.exceeded"), earliest: null, inside: true };
  if (b.exhausted_on) return { text: t("advice.fc.exceedsOn", { day: fmt.shortDay(b.exhausted_on) }), earliest, inside: inMonth(b.exhausted_on) };
  if (b.exhausted_on_high) return { text: t("advice.fc.mayExceed", { day: fmt.shortDay(b.exhausted_on_high) }), earliest: null, inside: false };
  return { text: t("advice.fc.within"), earliest: null, inside: false };
}

/** The forecast's month, the last day its spend counts (`as_of` is the midnight after it) and the days left.
 * @param {Json} f the Forecast */
export function forecastLead(f) {
  const params = { month: fmt.month(f.period), days: fmt.number(f.days_left) };
  if (f.days_left === 0) return t("advice.fc.leadOver", params);
  if (String(f.as_of) <= String(f.from)) return t("advice.fc.leadNone", params);
  const last = new Date(new Date(f.as_of).getTime() - 86_400_000).toISOString().slice(0, 10);
  return t("advice.fc.lead", { ...params, last: fmt.date(last) });
}

/** A tenant of the forecast: its name (or id); null is the deployments' capacity no tenant used. @param {string | null} id */
function forecastTenant(id) {
  return id === null ? h("span", { class: "muted" }, t("advice.fc.unallocated")) : tenantCell(id);
}

/** The forecast's section body, into `#forecast-body`. @param {HTMLElement} el */
export function renderForecast(el) {
  if (!drawState(el, "forecast", t("advice.fc.loading"), t("error.forecast"))) return;
  const f = state.forecast.data;
  const lead = h("p", { class: "advice-lead", id: "forecast-lead" }, forecastLead(f));
  if (f.tenants.length === 0 && f.budgets.length === 0) {
    el.replaceChildren(lead, emptyState("empty-forecast", ICON_EMPTY, t("advice.fc.empty"), t("advice.fc.emptyHint")));
    return;
  }
  const scales = bandScales(f.tenants);
  const money = (/** @type {Json} */ m) => fmt.money(m.amount, m.currency);
  const tenants = f.tenants.length === 0 ? null : h("div", { id: "forecast-tenants" },
    tableWrap("forecast-title", h("table", { class: "data", id: "forecast-table" },
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, t("col.tenant")), h("th", { scope: "col", class: "num" }, t("col.spent")),
        h("th", { scope: "col", class: "num" }, t("col.expected")), h("th", { scope: "col", class: "num" }, t("col.band")),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, t("col.bar"))))),
      h("tbody", {}, f.tenants.map((/** @type {Json} */ x) => h("tr", { "data-tenant": x.tenant_id ?? "", "data-currency": x.expected.currency },
        h("th", { scope: "row" }, forecastTenant(x.tenant_id)),
        num(x.spent.amount, money(x.spent), "spent"),
        num(x.expected.amount, h("span", { class: "strong" }, money(x.expected)), "expected"),
        num(`${x.low.amount}..${x.high.amount}`, t("advice.fc.band", { low: money(x.low), high: money(x.high) }), "band"),
        h("td", { class: "bar" }, bandBar(x, scales.get(x.expected.currency) ?? "0"))))))),
    h("ul", { class: "legend band-legend", "aria-hidden": "true" },
      h("li", {}, s("svg", { class: "swatch", width: 14, height: 10 }, s("rect", { class: "band-spent", width: 14, height: 10 })), t("advice.fc.legendSpent")),
      h("li", {}, s("svg", { class: "swatch", width: 14, height: 10 }, s("rect", { class: "band-range", width: 14, height: 10 })), t("advice.fc.legendBand")),
      h("li", {}, s("svg", { class: "swatch", width: 14, height: 10 }, s("line", { class: "band-expected", x1: 7, x2: 7, y1: 0, y2: 10 })), t("advice.fc.legendExpected"))),
    f.lines.length === 0 ? null : h("details", { class: "chart-data", id: "forecast-lines" },
      h("summary", {}, t("advice.fc.lines")),
      tableWrap("forecast-title", h("table", { class: "data compact" },
        h("thead", {}, h("tr", {}, ["col.tenant", "col.deployment", "col.spent", "col.expected", "col.low", "col.high"].map((k, i) =>
          h("th", { scope: "col", class: i > 1 ? "num" : null }, t(k))))),
        h("tbody", {}, f.lines.map((/** @type {Json} */ x) => h("tr", { "data-tenant": x.tenant_id ?? "", "data-deployment": x.deployment_id },
          h("td", {}, forecastTenant(x.tenant_id)), h("td", { class: "mono" }, x.deployment_id),
          num(x.spent.amount, money(x.spent), "spent"), num(x.expected.amount, money(x.expected), "expected"),
          num(x.low.amount, money(x.low), "low"), num(x.high.amount, money(x.high), "high"))))))));
  const budgets = f.budgets.length === 0 ? null : h("div", { class: "block", id: "forecast-budgets" },
    h("h4", { id: "forecast-budgets-title" }, t("advice.fc.budgets")),
    tableWrap("forecast-budgets-title", h("table", { class: "data", id: "forecast-budgets-table" },
      h("thead", {}, h("tr", {}, [["col.budget", false], ["col.tenant", false], ["col.limit", true], ["col.spent", true],
        ["col.expected", true], ["col.runsOut", false]].map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
      h("tbody", {}, f.budgets.map((/** @type {Json} */ b) => {
        const o = budgetOutlook(b, f);
        return h("tr", { "data-budget": b.budget_id, class: o.inside ? "over" : null },
          h("th", { scope: "row" }, h("span", { class: "strong" }, b.name), h("span", { class: "sub muted mono" }, b.budget_id)),
          h("td", {}, tenantCell(b.tenant_id)),
          num(b.limit.amount, money(b.limit), "limit"),
          num(b.spent.amount, money(b.spent), "spent"),
          num(b.expected.amount, money(b.expected), "expected"),
          h("td", { "data-col": "runs_out", "data-value": b.exhausted_on ?? "" },
            o.inside ? badge(o.text, "warn") : o.text, o.earliest ? h("span", { class: "sub muted" }, o.earliest) : null));
      })))));
  el.replaceChildren(lead, ...[tenants, budgets].filter((x) => x !== null),
    h("p", { class: "note" }, t("advice.fc.note", { history: fmt.date(f.history_from) })));
}

// ------------------------------------------------------------------ anomalies

/** An anomaly's figures in words: the metric, its value and the baseline's median (money in its currency, GPU time
 * in GPU-hours, exact), how far (in scaled MADs; a steady baseline has none) and which way.
 * @param {Json} x an Anomaly */
export function anomalyFigures(x) {
  const gpuHours = (/** @type {string} */ v) => t("advice.an.gpuHours", { n: fmt.number(fmt.divide(v, "3600", 4), 2) });
  const cost = x.metric === "cost";
  return {
    metric: cost ? t("advice.an.cost", { currency: x.currency ?? "" }) : t("advice.an.gpuTime"),
    value: cost ? fmt.money(x.value, x.currency) : gpuHours(x.value),
    median: cost ? fmt.money(x.baseline_median, x.currency) : gpuHours(x.baseline_median),
    deviation: x.deviation_mads === null ? t("advice.an.steady") : t("advice.an.mads", { n: fmt.number(x.deviation_mads, 2) }),
    direction: t(x.direction === "above" ? "advice.an.above" : "advice.an.below"),
  };
}

/** Newest hour first (the API's order, kept whatever comes). @param {Json[]} items */
export function newestFirst(items) {
  return [...items].sort((a, b) => (a.hour < b.hour ? 1 : a.hour > b.hour ? -1 : 0));
}

/** The anomalies' section body, into `#anomalies-body`. @param {HTMLElement} el */
export function renderAnomalies(el) {
  if (!drawState(el, "anomalies", t("advice.an.loading"), t("error.anomalies"))) return;
  const d = state.anomalies.data;
  if (d.items.length === 0) {
    el.replaceChildren(emptyState("empty-anomalies", ICON_EMPTY, t("advice.an.empty"), t("advice.an.emptyHint")));
    return;
  }
  const cols = [["col.hour", false], ["col.deployment", false], ["col.metric", false], ["col.value", true],
    ["col.median", true], ["col.deviation", true], ["col.direction", false]];
  el.replaceChildren(
    tableWrap("anomalies-title", h("table", { class: "data", id: "anomalies-table" },
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
      h("tbody", {}, newestFirst(d.items).map((x) => {
        const a = anomalyFigures(x);
        return h("tr", { "data-anomaly": x.id, "data-metric": x.metric, title: x.message },
          h("td", { "data-value": x.hour }, fmt.dateTime(x.hour)),
          h("td", { class: "mono" }, x.deployment_id),
          h("td", {}, a.metric),
          num(x.value, h("span", { class: "strong" }, a.value), "value", { title: t("title.exact", { value: x.value }) }),
          num(x.baseline_median, a.median, "baseline_median", { title: t("advice.an.baseline", { n: fmt.number(x.baseline_hours) }) }),
          num(x.deviation_mads ?? "", a.deviation, "deviation_mads"),
          h("td", {}, badge(a.direction, x.direction === "above" ? "warn" : "info")));
      })))),
    h("p", { class: "note" }, t("advice.an.note")));
}
