// @ts-check
// The allocation's chart block: the switch between the daily cost and the cost per 1M tokens, then the chart
// (drawn by ../chart.js), loading the daily series when the second is asked.

import { t } from "../i18n.js";
import { h } from "../dom.js";
import { renderCharts, renderRateCharts, PALETTE } from "../chart.js";
import { state, update, POLICY_ADMINS } from "../store.js";
import { api, loading, errorPanel } from "./common.js";

/** @typedef {import("../store.js").Json} Json */

/** The chart's place in the allocation (filled by `renderChart`). @param {import("../store.js").Json} _d */
export function renderChartBlock(_d) {
  return h("div", { class: "block", id: "chart" });
}

/** The chart block for the state, into `#chart`. @param {HTMLElement} block */
export function renderChart(block) {
  if (state.alloc.status !== "ok") return;
  const d = state.alloc.data;
  const scoped = !POLICY_ADMINS.has(state.who.role) || Boolean(state.viewAs);
  const button = (/** @type {"cost" | "rate"} */ mode, /** @type {string} */ label) => h("button", {
    type: "button", class: `seg${state.chart.mode === mode ? " on" : ""}`, "aria-pressed": String(state.chart.mode === mode),
    "data-mode": mode, onclick: () => setChartMode(mode),
  }, label);
  block.replaceChildren(
    h("div", { class: "segmented", role: "group", "aria-label": t("chart.mode") },
      button("cost", t("chart.modeCost")), button("rate", t("chart.modeRate"))),
    h("div", { id: "chart-body" }, chartBody(d)),
    ...(scoped ? [h("p", { class: "note" }, t(state.chart.mode === "rate" ? "chart.rateScoped" : "chart.scoped"))] : []));
  // On a narrow screen the chart scrolls sideways: show its latest days first.
  for (const el of block.querySelectorAll(".chart-scroll")) el.scrollLeft = el.scrollWidth;
}

/** @param {import("../store.js").Json} d */
function chartBody(d) {
  if (state.chart.mode === "cost") return renderCharts(d.daily, d.from, d.to, colorOf(d));
  if (state.chart.status === "error") return errorPanel(t("error.series"), state.chart.error, () => loadSeries(), "chart-error");
  if (state.chart.status !== "ok") return loading(t("chart.loading"), "chart-loading");
  return renderRateCharts(state.chart.series, colorOf(d));
}

/** @param {"cost" | "rate"} mode */
function setChartMode(mode) {
  if (state.chart.mode === mode) return;
  update({ chart: { ...state.chart, mode } });
  if (mode === "rate" && !state.chart.series && state.chart.status !== "loading") loadSeries();
}

/** The daily series of the period (cost and tokens per deployment and day), for the cost-per-token chart. */
export async function loadSeries() {
  const { from, to } = state.period;
  const seq = state.alloc.seq;
  update({ chart: { ...state.chart, status: "loading", error: null } });
  try {
    const series = await api(`/v1/finops/gpu/allocation/series?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&step=day`);
    if (seq !== state.alloc.seq) return;
    update({ chart: { ...state.chart, status: "ok", series } });
  } catch (e) {
    if (seq !== state.alloc.seq) return;
    update({ chart: { ...state.chart, status: "error", error: e } });
  }
}

/** A deployment's colour in the charts (by its rank among the period's deployments). @param {Json} d */
export function colorOf(d) {
  const ids = [...new Set(d.deployments.map((/** @type {Json} */ x) => x.deployment_id))].sort();
  return (/** @type {string} */ id) => PALETTE[Math.max(0, ids.indexOf(id)) % PALETTE.length];
}
