// @ts-check
// The GPU allocation page (/finops/gpu): sign-in with an API key, the allocation of a period (deployments,
// tenants, daily cost chart, gaps, findings), the budgets, what to do about the GPUs (savings, the month's
// forecast, anomalies), the allocation policies, the New allocation policy form for platform administrators, and
// the explanation of a cost, the issued statements and one statement as a printable page (`#statement/<number>`).
// No framework: the state lives in store.js, each section's view in views/, and this
// file's `render` is the one way the page is drawn: after every `update`, it redraws each region whose parts of
// the state changed (and every region in a new container).

import { lang, setLang, initialLang } from "./i18n.js";
import { state, onUpdate } from "./store.js";
import { renderShell, renderMain } from "./views/shell.js";
import { renderViewAs, renderPeriodError } from "./views/page.js";
import { renderAllocation, renderAllocationPeriod, renderRates } from "./views/allocation.js";
import { renderChart } from "./views/chart.js";
import { renderBudgets } from "./views/budgets.js";
import { renderRecommendations, renderForecast, renderAnomalies } from "./views/advice.js";
import { renderPolicies } from "./views/policies.js";
import { renderDrawer } from "./views/policy-form.js";
import { renderExplain } from "./views/explain.js";
import { renderStatements, renderStatementActions, renderIssued } from "./views/statements.js";
import { renderStatement, followHash } from "./views/statement.js";
import { boot } from "./views/signin.js";

/** @typedef {import("./store.js").State} State */

/**
 * A part of the page: the element `id`, drawn by `draw` from the parts of the state that `uses` returns (the
 * language is always one of them). Containers come before what they contain.
 * @typedef {{ id: string, uses: (s: State) => unknown[], draw: (el: HTMLElement) => void }} Region
 */

/** @type {Region[]} */
const REGIONS = [
  { id: "app", uses: (s) => [s.who], draw: renderShell },
  { id: "main", uses: (s) => [s.boot, s.signin, s.who, s.route], draw: renderMain },
  { id: "view-as-slot", uses: (s) => [s.who, s.tenants, s.seenTenants, s.viewAs], draw: renderViewAs },
  { id: "period-error", uses: (s) => [s.period.error], draw: renderPeriodError },
  { id: "alloc-period", uses: (s) => [s.alloc], draw: renderAllocationPeriod },
  { id: "alloc-body", uses: (s) => [s.alloc, s.who, s.viewAs, s.tenants], draw: renderAllocation },
  { id: "chart", uses: (s) => [s.alloc, s.chart, s.who, s.viewAs], draw: renderChart },
  // The cost-per-token cells are redrawn in place when they arrive (the tables around them stay).
  { id: "alloc-body", uses: (s) => [s.tokens], draw: renderRates },
  { id: "budgets-slot", uses: (s) => [s.budgets, s.tenants], draw: renderBudgets },
  { id: "recs-body", uses: (s) => [s.recommendations], draw: renderRecommendations },
  { id: "forecast-body", uses: (s) => [s.forecast, s.tenants], draw: renderForecast },
  { id: "anomalies-body", uses: (s) => [s.anomalies], draw: renderAnomalies },
  { id: "policies-body", uses: (s) => [s.policies, s.who], draw: renderPolicies },
  { id: "statements-actions", uses: (s) => [s.issue.busy, s.who, s.viewAs], draw: renderStatementActions },
  { id: "statements-issued", uses: (s) => [s.issue], draw: renderIssued },
  { id: "statements-body", uses: (s) => [s.statements, s.tenants, s.who, s.viewAs], draw: renderStatements },
  { id: "statement-body", uses: (s) => [s.statement, s.policies], draw: renderStatement },
  { id: "drawer-root", uses: (s) => [s.form], draw: renderDrawer },
  { id: "explain-root", uses: (s) => [s.explain, s.alloc, s.who, s.viewAs, s.tenants], draw: renderExplain },
];

/** What each region was last drawn into and from. @type {Map<Region, { el: HTMLElement, used: unknown[] }>} */
const drawn = new Map();

/** Draws every region whose element is new or whose parts of the state changed. */
function render() {
  for (const region of REGIONS) {
    const el = document.getElementById(region.id);
    if (!el) {
      drawn.delete(region);
      continue;
    }
    const used = [lang(), ...region.uses(state)];
    const last = drawn.get(region);
    if (last && last.el === el && last.used.length === used.length && last.used.every((u, i) => u === used[i])) continue;
    region.draw(el);
    drawn.set(region, { el, used });
  }
  syncModal();
}

/** While a dialog (the policy form or an explanation) is open, the page behind it is inert. */
function syncModal() {
  const open = state.form.open || state.explain.open;
  document.body.classList.toggle("modal-open", open);
  for (const el of [document.getElementById("main"), document.querySelector(".topbar")]) {
    if (el instanceof HTMLElement) el.inert = open;
  }
}

onUpdate(render);
setLang(initialLang(), false);
window.addEventListener("hashchange", followHash);
followHash();
boot();
