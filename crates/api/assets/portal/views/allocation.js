// @ts-check
// The allocation of the period: totals, deployments, tenants (with their cost per 1M tokens), the chart block,
// the gaps in the samples and the findings.

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h, ICON_EMPTY } from "../dom.js";
import { state, update } from "../store.js";
import { api, num, badge, tableWrap, loading, emptyState, errorPanel, tenantCell } from "./common.js";
import { renderChartBlock, loadSeries } from "./chart.js";
import { openExplain, tenantDeployments } from "./explain.js";

/** @typedef {import("../store.js").Json} Json */

/** Loads the allocation of the period asked (after checking it), then the cost per token of the same period;
 * resolves when both are done (what comes next waits for them: the server bounds the allocations at once). */
export async function loadAllocation() {
  const { from, to } = state.period;
  const error = !from || !to ? "period.required" : from > to ? "period.invalid" : null;
  update({ period: { ...state.period, error } });
  if (error) return;
  const seq = state.alloc.seq + 1;
  update({ alloc: { ...state.alloc, seq, status: "loading" } });
  try {
    const range = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    const data = await api(`/v1/finops/gpu/allocation?${range}`);
    if (seq !== state.alloc.seq) return;
    const seen = new Set([...state.seenTenants, ...(data.tenants || []).map((/** @type {Json} */ x) => x.tenant_id)]);
    update({
      alloc: { ...state.alloc, status: "ok", data, error: null },
      tokens: { status: "loading", deployments: new Map(), tenants: new Map() },
      chart: { ...state.chart, series: null, status: "idle", error: null },
      seenTenants: seen.size !== state.seenTenants.size ? seen : state.seenTenants,
    });
    // The cost per token after the allocation, one computation at a time (the server bounds how many run).
    await loadTokenCosts(range, seq);
    if (state.chart.mode === "rate" && seq === state.alloc.seq) loadSeries();
  } catch (e) {
    if (seq !== state.alloc.seq) return;
    update({ alloc: { ...state.alloc, status: "error", error: e } });
  }
}

/** The period's cost per 1M tokens per deployment and per tenant, shown in the tables once loaded; a failure
 * leaves them empty (a dash, said on hover). @param {string} range @param {number} seq */
async function loadTokenCosts(range, seq) {
  /** @param {Json[]} items @param {string} id */
  const byKey = (items, id) => new Map(items.map((x) => [`${x[id]}\u0000${x.currency}`, x]));
  /** @type {import("../store.js").State["tokens"]} */
  let tokens;
  try {
    const deployments = await api(`/v1/finops/gpu/token-costs?${range}&aggregate=deployment`);
    const tenants = await api(`/v1/finops/gpu/token-costs?${range}&aggregate=tenant`);
    tokens = { status: "ok", deployments: byKey(deployments.items, "deployment_id"), tenants: byKey(tenants.items, "tenant_id") };
  } catch {
    tokens = { status: "failed", deployments: new Map(), tenants: new Map() };
  }
  if (seq !== state.alloc.seq) return;
  update({ tokens });
}

/** The tables' cost-per-token cells, redrawn in place (the rest of the allocation stays). @param {HTMLElement} body */
export function renderRates(body) {
  const d = state.alloc.data;
  if (!d || state.alloc.status !== "ok") return;
  for (const x of d.deployments) {
    const td = document.querySelector(`#deployments-table tr[data-deployment="${CSS.escape(x.deployment_id)}"][data-currency="${CSS.escape(x.currency ?? "")}"] td[data-col=cost_per_mtok]`);
    td?.replaceWith(rateCell(state.tokens.deployments.get(`${x.deployment_id}\u0000${x.currency}`), "cost_per_mtok"));
  }
  for (const x of d.tenants) {
    const td = document.querySelector(`#tenants-table tr[data-tenant="${CSS.escape(x.tenant_id)}"][data-currency="${CSS.escape(x.cost.currency)}"] td[data-col=cost_per_mtok]`);
    td?.replaceWith(rateCell(state.tokens.tenants.get(`${x.tenant_id}\u0000${x.cost.currency}`), "cost_per_mtok"));
  }
  body.dataset.tokens = state.tokens.status;
}

/** A cost-per-1M-tokens cell: the blended rate, input and output (with how they were split) on hover.
 * @param {Json | undefined} row @param {string} col */
function rateCell(row, col) {
  if (state.tokens.status === "loading") return num("", "…", col, { title: t("chart.loading") });
  if (!row || row.cost_per_mtok === null) {
    const why = row || state.tokens.status === "ok" ? t("title.noTokens") : t("title.noTokenCosts");
    return num("", "—", col, { title: why });
  }
  const title = t("title.rate", {
    input: row.input_cost_per_mtok === null ? "—" : fmt.price(row.input_cost_per_mtok, row.currency),
    output: row.output_cost_per_mtok === null ? "—" : fmt.price(row.output_cost_per_mtok, row.currency),
    tokens: fmt.number(row.tokens),
    method: t(`method.${row.allocation_method}`),
  });
  return num(row.cost_per_mtok, fmt.price(row.cost_per_mtok, row.currency), col, { title });
}

/** The period the allocation covers, beside the section's title (kept while the next one loads).
 * @param {HTMLElement} el */
export function renderAllocationPeriod(el) {
  const a = state.alloc;
  if (a.status === "error") el.textContent = "";
  else if (a.status === "ok") el.textContent = periodText(a.data.from, a.data.to);
}

/** The allocation section's body for its state. @param {HTMLElement} body */
export function renderAllocation(body) {
  const a = state.alloc;
  body.setAttribute("aria-busy", a.status === "loading" ? "true" : "false");
  if (a.status === "loading" || a.status === "idle") {
    body.replaceChildren(loading(t("alloc.loading"), "alloc-loading"));
    return;
  }
  if (a.status === "error") {
    body.replaceChildren(errorPanel(t("error.allocation"), a.error, () => loadAllocation(), "alloc-error"));
    return;
  }
  const d = a.data;
  const parts = [];
  if (d.deployments.length === 0) {
    parts.push(emptyState("empty-usage", ICON_EMPTY, t("empty.usage.title"), t("empty.usage.hint")));
  } else {
    parts.push(renderTotals(d));
    parts.push(renderDeployments(d));
    if (d.tenants.length > 0) parts.push(renderTenants(d));
    parts.push(renderChartBlock(d));
  }
  if (d.deployments.length > 0 || d.gaps.length > 0) parts.push(renderGaps(d));
  if (d.findings.length > 0) parts.push(renderFindings(d));
  body.replaceChildren(...parts);
  // On a narrow screen the chart scrolls sideways: show its latest days first.
  for (const el of body.querySelectorAll(".chart-scroll")) el.scrollLeft = el.scrollWidth;
}

/** `Oct 1, 2026 to Oct 31, 2026` for whole days (the API's `to` is exclusive), else with the times.
 * @param {string} from @param {string} to */
function periodText(from, to) {
  const midnight = (/** @type {string} */ s) => /T00:00:00(\.0+)?Z$/.test(s);
  if (midnight(from) && midnight(to)) {
    const last = new Date(new Date(to).getTime() - 86_400_000).toISOString();
    return t("alloc.period", { from: fmt.date(from), to: fmt.date(last) });
  }
  return t("alloc.period", { from: fmt.dateTime(from), to: fmt.dateTime(to) });
}

/** @param {Json[]} deployments @returns {[string, Json[]][]} */
function byCurrency(deployments) {
  /** @type {Map<string, Json[]>} */
  const m = new Map();
  for (const d of deployments) {
    if (!d.currency) continue;
    if (!m.has(d.currency)) m.set(d.currency, []);
    m.get(d.currency)?.push(d);
  }
  return [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/** @param {Json} d */
function renderTotals(d) {
  const tiles = [];
  for (const [currency, ds] of byCurrency(d.deployments)) {
    tiles.push(tile(t("totals.cost"), fmt.money(fmt.sum(ds.map((x) => x.cost)), currency), "cost", currency));
    tiles.push(tile(t("totals.allocated"), fmt.money(fmt.sum(ds.map((x) => x.allocated)), currency), "allocated", currency));
    tiles.push(tile(t("totals.unallocated"), fmt.money(fmt.sum(ds.map((x) => x.unallocated)), currency), "unallocated", currency));
  }
  tiles.push(tile(t("totals.gpuHours"), fmt.number(fmt.sum(d.deployments.map((/** @type {Json} */ x) => x.gpu_hours)), 2), "gpu_hours"));
  const unpriced = d.deployments.reduce((/** @type {number} */ n, /** @type {Json} */ x) => n + x.unpriced_samples, 0);
  const estimated = d.deployments.reduce((/** @type {number} */ n, /** @type {Json} */ x) => n + x.estimated_samples, 0);
  tiles.push(tile(t("totals.unpriced"), fmt.number(unpriced), "unpriced", null, unpriced > 0 ? "warn" : null));
  tiles.push(tile(t("totals.estimated"), fmt.number(estimated), "estimated", null, estimated > 0 ? "est" : null));
  return h("dl", { class: "tiles", "aria-label": t("totals.label") }, tiles);
}

/** @param {string} label @param {string} value @param {string} key @param {string | null} [currency] @param {string | null} [tone] */
function tile(label, value, key, currency, tone) {
  return h("div", { class: `tile${tone ? ` ${tone}` : ""}`, "data-tile": key, "data-currency": currency },
    h("dt", {}, label), h("dd", {}, value));
}

/** @param {Json} d */
function renderDeployments(d) {
  const cols = [
    ["col.deployment", false], ["col.samples", true], ["col.estimated", true], ["col.gpus", true], ["col.gpuHours", true],
    ["col.busyGpuHours", true], ["col.energy", true], ["col.cost", true], ["col.allocated", true], ["col.unallocated", true],
    ["col.costPerMtok", true], ["col.unpriced", true],
  ];
  const exact = (/** @type {string} */ v) => t("title.exact", { value: v });
  const rows = d.deployments.map((/** @type {Json} */ x, /** @type {number} */ i) => h("tr", { "data-deployment": x.deployment_id, "data-currency": x.currency ?? "" },
    h("th", { scope: "row", class: "id" }, x.currency
      ? h("button", { type: "button", class: "link mono", id: `explain-dep-${i}`, title: t("explain.open"), onclick: (/** @type {Event} */ e) => openExplain(x.deployment_id, null, /** @type {HTMLElement} */ (e.currentTarget)) }, x.deployment_id)
      : h("span", { class: "mono" }, x.deployment_id),
      x.dedicated ? [" ", badge(t("badge.dedicated"), "info", t("title.dedicated"))] : null),
    num(String(x.samples), fmt.number(x.samples), "samples"),
    num(String(x.estimated_samples), x.estimated_samples > 0 ? badge(fmt.number(x.estimated_samples), "est", t("title.estimated")) : fmt.number(0), "estimated_samples"),
    num(String(x.gpus), fmt.number(x.gpus), "gpus"),
    num(x.gpu_hours, fmt.number(x.gpu_hours, 2), "gpu_hours", { title: exact(x.gpu_hours) }),
    num(x.busy_gpu_hours, fmt.number(x.busy_gpu_hours, 2), "busy_gpu_hours", { title: exact(x.busy_gpu_hours) }),
    num(x.energy_kwh, fmt.number(x.energy_kwh, 2), "energy_kwh", { title: exact(x.energy_kwh) }),
    num(x.cost, fmt.money(x.currency ? x.cost : null, x.currency), "cost"),
    num(x.allocated, fmt.money(x.currency ? x.allocated : null, x.currency), "allocated"),
    num(x.unallocated, fmt.money(x.currency ? x.unallocated : null, x.currency), "unallocated"),
    rateCell(state.tokens.deployments.get(`${x.deployment_id}\u0000${x.currency}`), "cost_per_mtok"),
    num(String(x.unpriced_samples), x.unpriced_samples > 0 ? badge(fmt.number(x.unpriced_samples), "warn", t("title.unpriced")) : fmt.number(0), "unpriced_samples")));
  return h("div", { class: "block", id: "deployments" },
    h("h3", { id: "deployments-title" }, t("deployments.title")),
    tableWrap("deployments-title", h("table", { class: "data", id: "deployments-table" },
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
      h("tbody", {}, rows))),
    h("p", { class: "note" }, t("deployments.note")));
}

/** @param {Json} d */
function renderTenants(d) {
  const rows = d.tenants.map((/** @type {Json} */ x, /** @type {number} */ i) => h("tr", { "data-tenant": x.tenant_id, "data-currency": x.cost.currency },
    h("th", { scope: "row", class: "id" }, tenantDeployments(x.tenant_id).length > 0
      ? h("button", { type: "button", class: "link", id: `explain-tenant-${i}`, title: t("explain.openTenant"), onclick: (/** @type {Event} */ e) => openExplain(tenantDeployments(x.tenant_id)[0], x.tenant_id, /** @type {HTMLElement} */ (e.currentTarget)) }, tenantCell(x.tenant_id))
      : tenantCell(x.tenant_id)),
    num(x.gpu_seconds, fmt.number(x.gpu_seconds, 3), "gpu_seconds"),
    num(x.share, fmt.percent(x.share), "share", { title: t("title.exact", { value: x.share }) }),
    num(x.cost.amount, fmt.money(x.cost.amount, x.cost.currency), "cost"),
    rateCell(state.tokens.tenants.get(`${x.tenant_id}\u0000${x.cost.currency}`), "cost_per_mtok")));
  return h("div", { class: "block", id: "tenants" },
    h("h3", { id: "tenants-title" }, t("tenants.title")),
    tableWrap("tenants-title", h("table", { class: "data", id: "tenants-table" },
      h("thead", {}, h("tr", {},
        h("th", { scope: "col" }, t("col.tenant")), h("th", { scope: "col", class: "num" }, t("col.gpuSeconds")),
        h("th", { scope: "col", class: "num" }, t("col.share")), h("th", { scope: "col", class: "num" }, t("col.cost")),
        h("th", { scope: "col", class: "num" }, t("col.costPerMtok")))),
      h("tbody", {}, rows))),
    h("p", { class: "note" }, t("tenants.note")));
}

/** @param {Json} d */
function renderGaps(d) {
  const title = t("gaps.title", { n: fmt.number(d.gaps.length) });
  if (d.gaps.length === 0) {
    return h("div", { class: "block", id: "gaps" }, h("h3", {}, title), h("p", { class: "note" }, t("gaps.none")));
  }
  const reason = (/** @type {string} */ r) => {
    const k = `reason.${r}`;
    return t(k) === k ? r : t(k);
  };
  return h("div", { class: "block", id: "gaps" },
    h("h3", { id: "gaps-title" }, title),
    h("p", { class: "note" }, t("gaps.note")),
    tableWrap("gaps-title", h("table", { class: "data compact", id: "gaps-table" },
      h("thead", {}, h("tr", {}, ["col.deployment", "col.gpu", "col.node", "col.from", "col.to", "col.reason"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, d.gaps.map((/** @type {Json} */ g) => h("tr", { "data-gpu": g.gpu_uuid },
        h("td", { class: "mono" }, g.deployment_id), h("td", { class: "mono" }, g.gpu_uuid), h("td", {}, g.node),
        h("td", { "data-value": g.from }, fmt.dateTime(g.from)), h("td", { "data-value": g.to }, fmt.dateTime(g.to)),
        h("td", {}, badge(reason(g.reason), "warn"))))))));
}

/** @param {Json} d */
function renderFindings(d) {
  return h("div", { class: "block", id: "findings" },
    h("h3", {}, t("findings.title", { n: fmt.number(d.findings.length) })),
    h("ul", { class: "findings" }, d.findings.map((/** @type {Json} */ f) => {
      const k = `finding.${f.code}`;
      return h("li", { "data-code": f.code }, badge(t(k) === k ? f.code : t(k), "warn"), " ", h("span", {}, f.message));
    })));
}
