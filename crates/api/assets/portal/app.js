// The GPU allocation page (/finops/gpu): sign-in with an API key, the allocation of a period (deployments,
// tenants, daily cost chart, gaps, findings), the allocation policies, and the New allocation policy form
// for platform administrators. Plain DOM, no framework; every text goes in as text, never as HTML.

import { t, lang, setLang, initialLang, LANGS } from "./i18n.js";
import { call, ApiFailure, storedKey, storeKey, forgetKey } from "./api.js";
import * as fmt from "./format.js";
import { renderCharts, renderExplainChart, renderRateCharts, swatch, PALETTE } from "./chart.js";

/** Roles for which the FinOps section opens (the portal guide's Roles table). */
const READERS = new Set(["platform_admin", "finops", "tenant_admin", "auditor"]);
/** Roles that create allocation policies. */
const POLICY_ADMINS = new Set(["platform_admin"]);

const FORM_DEFAULTS = {
  name: "",
  deployment_pattern: "*",
  gpu_model: "",
  currency: "USD",
  gpu_hourly_cost: "",
  overhead_pct: "0",
  pue: "",
  energy_kwh_price: "",
  effective_from: "",
  enabled: true,
};

const state = {
  key: null,
  who: null,
  boot: { status: "idle", error: null },
  signin: { busy: false, error: null },
  period: { from: fmt.utcDay(-30), to: fmt.utcDay(0), error: null },
  alloc: { status: "idle", data: null, error: null, seq: 0 },
  /** Cost per 1M tokens of the period (GET /v1/finops/gpu/token-costs), per deployment and per tenant, keyed
   * `id\u0000currency`; empty until loaded (or when the call fails: the column then shows a dash). */
  tokens: { status: "idle", deployments: new Map(), tenants: new Map() },
  /** The chart: `cost` (daily cost) or `rate` (cost per 1M tokens per day, from the allocation series). */
  chart: { mode: "cost", series: null, status: "idle", error: null },
  /** Registered tenants the key may see (GET /v1/tenants), by id; tenants only seen in data have none. */
  tenants: new Map(),
  /** Tenant ids seen in allocations, registered or not: what a platform_admin may view as. */
  seenTenants: new Set(),
  /** The tenant a platform_admin views the page as (an id sent as X-EAI-Tenant), or null. */
  viewAs: null,
  policies: { status: "idle", items: [], error: null, seq: 0 },
  /** Budgets in force or scheduled (GET /v1/finops/budgets); the section shows only when there are some. */
  budgets: { items: [], seq: 0 },
  form: { open: false, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: null },
  /** Why a deployment costs what it does (GET /v1/finops/gpu/allocation/explain), in a dialog: for one deployment,
   * or for one tenant's charge (`tenant`, with the deployments it is charged on to pick from). */
  explain: { open: false, deployment: null, tenant: null, status: "idle", data: null, error: null, opener: null, seq: 0, pods: null },
};

// ---------------------------------------------------------------------------------------------- DOM helpers

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  appendAll(el, children);
  return el;
}

function appendAll(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

function svgIcon(paths, extra = {}) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  for (const [k, v] of Object.entries({ viewBox: "0 0 24 24", width: 20, height: 20, "aria-hidden": "true", focusable: "false", fill: "none", stroke: "currentColor", "stroke-width": 2, "stroke-linecap": "round", "stroke-linejoin": "round", ...extra })) {
    svg.setAttribute(k, String(v));
  }
  for (const d of paths) {
    const p = document.createElementNS(NS, "path");
    p.setAttribute("d", d);
    svg.append(p);
  }
  return svg;
}

const ICON_REFRESH = ["M20 11a8 8 0 1 0-2.34 5.66", "M20 4v7h-7"];
const ICON_CLOSE = ["M6 6l12 12", "M18 6L6 18"];
const ICON_PLUS = ["M12 5v14", "M5 12h14"];
const ICON_ALERT = ["M12 9v4", "M12 17h.01", "M10.3 3.9L1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z"];
const ICON_EMPTY = ["M3 7h18v13H3z", "M3 7l3-4h12l3 4", "M9 12h6"];
const ICON_LOCK = ["M5 11h14v10H5z", "M8 11V7a4 4 0 0 1 8 0v4"];

const $ = (sel) => document.querySelector(sel);

/** Calls the API with this tab's key, signed in to the tenant viewed as (if any). */
function api(path, opts = {}) {
  return call(path, { ...opts, key: state.key, tenant: state.viewAs });
}

/** A tenant as people know it: its registered name (and slug), else its id. */
function tenantLabel(id) {
  const known = id ? state.tenants.get(id) : null;
  return known ? known.name : id;
}

/** A tenant cell: the name, with the id on hover; a tenant never registered shows its id. */
function tenantCell(id) {
  const known = state.tenants.get(id);
  if (!known) return h("span", { class: "mono", title: id }, id);
  return h("span", { class: "tenant-name", title: id, "data-slug": known.slug }, known.name,
    h("span", { class: "muted slug" }, ` ${known.slug}`));
}

function toast(message) {
  const el = $("#toast");
  el.textContent = message;
  el.classList.add("shown");
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.remove("shown"), 6000);
}

// ---------------------------------------------------------------------------------------------- the shell

function renderShell() {
  document.title = `${t("page.title")} · ${t("brand")}`;
  const app = $("#app");
  app.replaceChildren(
    h("a", { class: "skip", href: "#main" }, t("skip")),
    renderTopbar(),
    h("main", { id: "main", tabindex: "-1" }),
    h("div", { id: "drawer-root" }),
    h("div", { id: "explain-root" }),
    h("div", { id: "toast", class: "toast", role: "status", "aria-live": "polite" }),
  );
  renderMain();
  renderDrawer();
  renderExplain();
}

function renderTopbar() {
  const who = state.who;
  return h("header", { class: "topbar" },
    h("div", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }, "▮▮"), t("brand")),
    h("nav", { class: "crumbs", "aria-label": t("nav.label") },
      h("ol", {},
        h("li", {}, t("nav.finops")),
        h("li", {}, h("a", { href: "/finops/gpu", "aria-current": "page" }, t("nav.gpu"))))),
    h("div", { class: "tools" },
      who ? h("div", { class: "who", id: "who", "data-role": who.role },
        h("span", { class: "visually-hidden" }, `${t("who.label")} `),
        h("span", { class: "who-role" }, roleName(who.role)),
        h("span", { class: "who-tenant", title: who.tenant_id || null },
          who.tenant_id ? t("who.tenant", { name: (who.tenant && who.tenant.name) || who.tenant_id }) : t("who.all"))) : null,
      h("label", { class: "lang" },
        h("span", { class: "visually-hidden" }, t("lang.label")),
        h("select", { id: "lang", onchange: (e) => changeLang(e.target.value) },
          LANGS.map((l) => h("option", { value: l, selected: l === lang() }, t(`lang.${l}`))))),
      who ? h("button", { type: "button", class: "btn ghost", id: "signout", onclick: signOut }, t("signout")) : null));
}

function roleName(role) {
  const key = `role.${role}`;
  const name = t(key);
  return name === key ? role : name;
}

function renderMain() {
  const main = $("#main");
  if (!main) return;
  if (state.boot.status === "loading") {
    main.replaceChildren(loading(t("signin.busy")));
  } else if (state.boot.status === "error") {
    main.replaceChildren(h("div", { class: "page narrow" }, errorPanel(t("signin.title"), state.boot.error, boot)));
  } else if (!state.who) {
    main.replaceChildren(renderSignIn());
  } else if (!READERS.has(state.who.role)) {
    main.replaceChildren(renderDenied());
  } else {
    main.replaceChildren(renderPage());
    renderViewAs();
    renderAllocation();
    renderBudgets();
    renderPolicies();
  }
}

function changeLang(l) {
  captureForm();
  const focusedId = document.activeElement && document.activeElement.id;
  setLang(l, true);
  renderShell();
  const again = focusedId && document.getElementById(focusedId);
  if (again) again.focus();
}

// ---------------------------------------------------------------------------------------------- sign-in

function renderSignIn() {
  const err = state.signin.error;
  return h("div", { class: "page narrow" },
    h("section", { class: "card signin", "aria-labelledby": "signin-title" },
      h("h1", { id: "signin-title" }, t("signin.title")),
      h("p", { class: "muted" }, t("page.title"), " — ", t("signin.intro")),
      h("form", { id: "signin-form", novalidate: true, onsubmit: signIn },
        h("div", { class: `field${err ? " invalid" : ""}` },
          h("label", { for: "signin-key" }, t("signin.key")),
          h("input", {
            id: "signin-key", name: "key", type: "password", autocomplete: "off", spellcheck: "false",
            autocapitalize: "off", required: true, "aria-describedby": err ? "signin-hint signin-error" : "signin-hint",
            "aria-invalid": err ? "true" : null,
          }),
          h("p", { class: "hint", id: "signin-hint" }, t("signin.keyHint")),
          err ? h("div", { class: "field-error", id: "signin-error", role: "alert" },
            h("span", { class: "error-text" }, err instanceof ApiFailure ? err.text() : t(err)),
            err instanceof ApiFailure ? failureFacts(err) : null) : null),
        h("button", { type: "submit", class: "btn primary", id: "signin-submit", disabled: state.signin.busy },
          state.signin.busy ? t("signin.busy") : t("signin.submit")))));
}

async function signIn(event) {
  event.preventDefault();
  const input = $("#signin-key");
  const key = input.value.trim();
  if (!key) {
    state.signin.error = "signin.required";
    renderMain();
    $("#signin-key").focus();
    return;
  }
  state.signin = { busy: true, error: null };
  renderMain();
  try {
    const who = await call("/v1/auth/whoami", { key });
    state.key = key;
    state.who = who;
    state.signin = { busy: false, error: null };
    storeKey(key);
    enter();
    $("#main").focus();
  } catch (e) {
    state.signin = { busy: false, error: e instanceof ApiFailure ? e : new ApiFailure({ code: "network" }) };
    renderMain();
    const field = $("#signin-key");
    field.value = key;
    field.focus();
  }
}

function signOut() {
  forgetKey();
  state.key = null;
  state.who = null;
  state.tenants = new Map();
  state.seenTenants = new Set();
  state.viewAs = null;
  state.alloc = { status: "idle", data: null, error: null, seq: state.alloc.seq + 1 };
  state.policies = { status: "idle", items: [], error: null, seq: state.policies.seq + 1 };
  state.budgets = { items: [], seq: state.budgets.seq + 1 };
  state.form = { open: false, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: null };
  state.signin = { busy: false, error: null };
  renderShell();
  $("#signin-key").focus();
}

/** After sign-in (or a reload with a key in this tab): the page for the caller's role. */
function enter() {
  renderShell();
  if (READERS.has(state.who.role)) {
    loadTenants();
    loadAllocation();
    loadPolicies();
    loadBudgets();
  }
}

/** The registered tenants the key may see, for names; without them the page shows ids. */
async function loadTenants() {
  try {
    const data = await call("/v1/tenants", { key: state.key });
    state.tenants = new Map((data.items || []).map((x) => [x.id, x]));
  } catch {
    state.tenants = new Map();
  }
  renderViewAs();
  renderAllocation();
}

/** Whether this caller may view the page as a tenant: a platform_admin (no tenant of its own). */
function canViewAs() {
  return state.who && state.who.role === "platform_admin" && !state.who.tenant_id;
}

function renderViewAs() {
  const slot = $("#view-as-slot");
  if (!slot) return;
  if (!canViewAs()) {
    slot.replaceChildren();
    return;
  }
  const ids = new Set([...state.tenants.keys(), ...state.seenTenants]);
  if (state.viewAs) ids.add(state.viewAs);
  // Registered tenants by name, then those only seen in data, by id.
  const options = [...ids].map((id) => ({ id, label: tenantLabel(id), named: state.tenants.has(id) }))
    .sort((a, b) => (b.named - a.named) || a.label.localeCompare(b.label, lang()));
  const onChange = (e) => {
    state.viewAs = e.target.value || null;
    renderViewAs();
    loadAllocation();
    loadPolicies();
    loadBudgets();
  };
  slot.replaceChildren(
    h("div", { class: "field inline view-as" },
      h("label", { for: "view-as" }, t("viewas.label")),
      h("select", { id: "view-as", onchange: onChange, "aria-describedby": "view-as-hint" },
        h("option", { value: "", selected: !state.viewAs }, t("viewas.all")),
        options.map((o) => h("option", { value: o.id, selected: o.id === state.viewAs, title: o.id }, o.label))),
      h("p", { class: "hint", id: "view-as-hint" },
        state.viewAs ? t("viewas.scoped", { name: tenantLabel(state.viewAs) }) : t("viewas.hint"))));
}

async function boot() {
  const key = storedKey();
  if (!key) {
    state.boot = { status: "idle", error: null };
    renderShell();
    return;
  }
  state.boot = { status: "loading", error: null };
  renderShell();
  try {
    state.who = await call("/v1/auth/whoami", { key });
    state.key = key;
    state.boot = { status: "idle", error: null };
    enter();
  } catch (e) {
    if (e instanceof ApiFailure && e.code !== "network" && e.status < 500) {
      // The key of this tab no longer works: back to the sign-in, saying why.
      forgetKey();
      state.boot = { status: "idle", error: null };
      state.signin = { busy: false, error: e };
    } else {
      state.boot = { status: "error", error: e };
    }
    renderShell();
  }
}

// ---------------------------------------------------------------------------------------------- not for this role

function renderDenied() {
  return h("div", { class: "page narrow" },
    h("section", { class: "state denied", id: "denied", "aria-labelledby": "denied-title" },
      h("div", { class: "state-icon" }, svgIcon(ICON_LOCK, { width: 40, height: 40 })),
      h("h1", { id: "denied-title" }, t("denied.title")),
      h("p", {}, t("denied.body", { role: roleName(state.who.role) })),
      h("p", { class: "muted" }, t("denied.hint"))));
}

// ---------------------------------------------------------------------------------------------- the page

function renderPage() {
  const canCreate = POLICY_ADMINS.has(state.who.role);
  return h("div", { class: "page" },
    h("div", { class: "page-head" },
      h("div", {},
        h("h1", {}, t("page.title")),
        h("p", { class: "lead" }, t("page.lead"))),
      h("div", { class: "head-controls" }, h("div", { id: "view-as-slot" }), renderPeriod())),
    h("section", { id: "allocation", class: "card", "aria-labelledby": "alloc-title" },
      h("div", { class: "section-head" },
        h("h2", { id: "alloc-title" }, t("alloc.title")),
        h("span", { class: "muted", id: "alloc-period" })),
      h("div", { id: "alloc-body" })),
    h("div", { id: "budgets-slot" }),
    h("section", { id: "policies", class: "card", "aria-labelledby": "policies-title" },
      h("div", { class: "section-head" },
        h("h2", { id: "policies-title" }, t("policies.title")),
        h("div", { class: "actions" },
          h("button", {
            type: "button", class: "btn icon", id: "policies-refresh", title: t("policies.refresh"),
            "aria-label": t("policies.refresh"), onclick: () => loadPolicies(),
          }, svgIcon(ICON_REFRESH)),
          canCreate ? h("button", { type: "button", class: "btn primary", id: "policy-new", onclick: (e) => openForm(e.currentTarget) },
            svgIcon(ICON_PLUS, { width: 18, height: 18 }), t("policies.new")) : null)),
      h("div", { id: "policies-body" })));
}

function renderPeriod() {
  const p = state.period;
  const onChange = () => {
    state.period.from = $("#period-from").value;
    state.period.to = $("#period-to").value;
    loadAllocation();
  };
  return h("form", { class: "period", id: "period", novalidate: true, onsubmit: (e) => { e.preventDefault(); onChange(); } },
    h("fieldset", {},
      h("legend", { class: "visually-hidden" }, t("period.legend")),
      h("div", { class: "period-fields" },
        h("div", { class: "field inline" },
          h("label", { for: "period-from" }, t("period.from")),
          h("input", { type: "date", id: "period-from", value: p.from, onchange: onChange, "aria-describedby": "period-hint period-error" })),
        h("div", { class: "field inline" },
          h("label", { for: "period-to" }, t("period.to")),
          h("input", { type: "date", id: "period-to", value: p.to, onchange: onChange, "aria-describedby": "period-hint period-error" }))),
      h("p", { class: "hint", id: "period-hint" }, t("period.hint")),
      h("p", { class: "field-error", id: "period-error", role: "alert", hidden: !p.error }, p.error ? t(p.error) : "")));
}

// ---------------------------------------------------------------------------------------------- allocation

async function loadAllocation() {
  const { from, to } = state.period;
  if (!from || !to) {
    state.period.error = "period.required";
  } else if (from > to) {
    state.period.error = "period.invalid";
  } else {
    state.period.error = null;
  }
  const errEl = $("#period-error");
  if (errEl) {
    errEl.hidden = !state.period.error;
    errEl.textContent = state.period.error ? t(state.period.error) : "";
  }
  if (state.period.error) return;
  const seq = ++state.alloc.seq;
  state.alloc.status = "loading";
  renderAllocation();
  try {
    const range = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
    const data = await api(`/v1/finops/gpu/allocation?${range}`);
    if (seq !== state.alloc.seq) return;
    state.alloc = { ...state.alloc, status: "ok", data, error: null };
    state.tokens = { status: "loading", deployments: new Map(), tenants: new Map() };
    state.chart = { ...state.chart, series: null, status: "idle", error: null };
    // The cost per token after the allocation, one computation at a time (the server bounds how many run).
    loadTokenCosts(range, seq).then(() => {
      if (state.chart.mode === "rate" && seq === state.alloc.seq) loadSeries();
    });
    const before = state.seenTenants.size;
    for (const x of data.tenants || []) state.seenTenants.add(x.tenant_id);
    if (state.seenTenants.size !== before) renderViewAs();
  } catch (e) {
    if (seq !== state.alloc.seq) return;
    state.alloc = { ...state.alloc, status: "error", error: e };
  }
  renderAllocation();
}

/** The period's cost per 1M tokens per deployment and per tenant, shown in the tables once loaded; a failure
 * leaves them empty (a dash, said on hover). */
async function loadTokenCosts(range, seq) {
  const byKey = (items, id) => new Map(items.map((x) => [`${x[id]}\u0000${x.currency}`, x]));
  let tokens;
  try {
    const deployments = await api(`/v1/finops/gpu/token-costs?${range}&aggregate=deployment`);
    const tenants = await api(`/v1/finops/gpu/token-costs?${range}&aggregate=tenant`);
    tokens = { status: "ok", deployments: byKey(deployments.items, "deployment_id"), tenants: byKey(tenants.items, "tenant_id") };
  } catch {
    tokens = { status: "failed", deployments: new Map(), tenants: new Map() };
  }
  if (seq !== state.alloc.seq) return;
  state.tokens = tokens;
  renderRates();
}

/** The tables' cost-per-token cells, redrawn in place. */
function renderRates() {
  const d = state.alloc.data;
  const body = $("#alloc-body");
  if (!d || !body) return;
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

/** The daily series of the period (cost and tokens per deployment and day), for the cost-per-token chart. */
async function loadSeries() {
  const { from, to } = state.period;
  const seq = state.alloc.seq;
  state.chart = { ...state.chart, status: "loading", error: null };
  renderChart();
  try {
    const series = await api(`/v1/finops/gpu/allocation/series?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&step=day`);
    if (seq !== state.alloc.seq) return;
    state.chart = { ...state.chart, status: "ok", series };
  } catch (e) {
    if (seq !== state.alloc.seq) return;
    state.chart = { ...state.chart, status: "error", error: e };
  }
  renderChart();
}

function setChartMode(mode) {
  if (state.chart.mode === mode) return;
  state.chart = { ...state.chart, mode };
  if (mode === "rate" && !state.chart.series && state.chart.status !== "loading") loadSeries();
  else renderChart();
}

/** The chart block: the switch between cost and cost per 1M tokens, then the chart. */
function renderChartBlock(d) {
  const scoped = !POLICY_ADMINS.has(state.who.role) || Boolean(state.viewAs);
  const button = (mode, label) => h("button", {
    type: "button", class: `seg${state.chart.mode === mode ? " on" : ""}`, "aria-pressed": String(state.chart.mode === mode),
    "data-mode": mode, onclick: () => setChartMode(mode),
  }, label);
  return h("div", { class: "block", id: "chart" },
    h("div", { class: "segmented", role: "group", "aria-label": t("chart.mode") },
      button("cost", t("chart.modeCost")), button("rate", t("chart.modeRate"))),
    h("div", { id: "chart-body" }, chartBody(d)),
    scoped ? h("p", { class: "note" }, t(state.chart.mode === "rate" ? "chart.rateScoped" : "chart.scoped")) : null);
}

function chartBody(d) {
  if (state.chart.mode === "cost") return renderCharts(d.daily, d.from, d.to, colorOf(d));
  if (state.chart.status === "error") return errorPanel(t("error.series"), state.chart.error, () => loadSeries(), "chart-error");
  if (state.chart.status !== "ok") return loading(t("chart.loading"), "chart-loading");
  return renderRateCharts(state.chart.series, colorOf(d));
}

function renderChart() {
  const block = $("#chart");
  if (!block || state.alloc.status !== "ok") return;
  block.replaceWith(renderChartBlock(state.alloc.data));
  for (const el of document.querySelectorAll("#chart .chart-scroll")) el.scrollLeft = el.scrollWidth;
}

/** A cost-per-1M-tokens cell: the blended rate, input and output (with how they were split) on hover. */
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

function renderAllocation() {
  const body = $("#alloc-body");
  if (!body) return;
  const a = state.alloc;
  const periodLabel = $("#alloc-period");
  body.setAttribute("aria-busy", a.status === "loading" ? "true" : "false");
  if (a.status === "loading" || a.status === "idle") {
    body.replaceChildren(loading(t("alloc.loading"), "alloc-loading"));
    return;
  }
  if (a.status === "error") {
    if (periodLabel) periodLabel.textContent = "";
    body.replaceChildren(errorPanel(t("error.allocation"), a.error, () => loadAllocation(), "alloc-error"));
    return;
  }
  const d = a.data;
  if (periodLabel) periodLabel.textContent = periodText(d.from, d.to);
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

/** `Oct 1, 2026 to Oct 31, 2026` for whole days (the API's `to` is exclusive), else with the times. */
function periodText(from, to) {
  const midnight = (s) => /T00:00:00(\.0+)?Z$/.test(s);
  if (midnight(from) && midnight(to)) {
    const last = new Date(new Date(to).getTime() - 86_400_000).toISOString();
    return t("alloc.period", { from: fmt.date(from), to: fmt.date(last) });
  }
  return t("alloc.period", { from: fmt.dateTime(from), to: fmt.dateTime(to) });
}

function colorOf(d) {
  const ids = [...new Set(d.deployments.map((x) => x.deployment_id))].sort();
  return (id) => PALETTE[Math.max(0, ids.indexOf(id)) % PALETTE.length];
}

function byCurrency(deployments) {
  const m = new Map();
  for (const d of deployments) {
    if (!d.currency) continue;
    if (!m.has(d.currency)) m.set(d.currency, []);
    m.get(d.currency).push(d);
  }
  return [...m.entries()].sort(([a], [b]) => a.localeCompare(b));
}

function renderTotals(d) {
  const tiles = [];
  for (const [currency, ds] of byCurrency(d.deployments)) {
    tiles.push(tile(t("totals.cost"), fmt.money(fmt.sum(ds.map((x) => x.cost)), currency), "cost", currency));
    tiles.push(tile(t("totals.allocated"), fmt.money(fmt.sum(ds.map((x) => x.allocated)), currency), "allocated", currency));
    tiles.push(tile(t("totals.unallocated"), fmt.money(fmt.sum(ds.map((x) => x.unallocated)), currency), "unallocated", currency));
  }
  tiles.push(tile(t("totals.gpuHours"), fmt.number(fmt.sum(d.deployments.map((x) => x.gpu_hours)), 2), "gpu_hours"));
  const unpriced = d.deployments.reduce((n, x) => n + x.unpriced_samples, 0);
  const estimated = d.deployments.reduce((n, x) => n + x.estimated_samples, 0);
  tiles.push(tile(t("totals.unpriced"), fmt.number(unpriced), "unpriced", null, unpriced > 0 ? "warn" : null));
  tiles.push(tile(t("totals.estimated"), fmt.number(estimated), "estimated", null, estimated > 0 ? "est" : null));
  return h("dl", { class: "tiles", "aria-label": t("totals.label") }, tiles);
}

function tile(label, value, key, currency, tone) {
  return h("div", { class: `tile${tone ? ` ${tone}` : ""}`, "data-tile": key, "data-currency": currency },
    h("dt", {}, label), h("dd", {}, value));
}

function num(value, text, col, extra = {}) {
  return h("td", { class: `num${extra.class ? ` ${extra.class}` : ""}`, "data-col": col, "data-value": value ?? "", title: extra.title }, text, extra.after ?? null);
}

function badge(text, tone, title) {
  return h("span", { class: `badge ${tone}`, title }, text);
}

function renderDeployments(d) {
  const cols = [
    ["col.deployment", false], ["col.samples", true], ["col.estimated", true], ["col.gpus", true], ["col.gpuHours", true],
    ["col.busyGpuHours", true], ["col.energy", true], ["col.cost", true], ["col.allocated", true], ["col.unallocated", true],
    ["col.costPerMtok", true], ["col.unpriced", true],
  ];
  const exact = (v) => t("title.exact", { value: v });
  const rows = d.deployments.map((x, i) => h("tr", { "data-deployment": x.deployment_id, "data-currency": x.currency ?? "" },
    h("th", { scope: "row", class: "id" }, x.currency
      ? h("button", { type: "button", class: "link mono", id: `explain-dep-${i}`, title: t("explain.open"), onclick: (e) => openExplain(x.deployment_id, null, e.currentTarget) }, x.deployment_id)
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
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(k))))),
      h("tbody", {}, rows))),
    h("p", { class: "note" }, t("deployments.note")));
}

function renderTenants(d) {
  const rows = d.tenants.map((x, i) => h("tr", { "data-tenant": x.tenant_id, "data-currency": x.cost.currency },
    h("th", { scope: "row", class: "id" }, tenantDeployments(x.tenant_id).length > 0
      ? h("button", { type: "button", class: "link", id: `explain-tenant-${i}`, title: t("explain.openTenant"), onclick: (e) => openExplain(tenantDeployments(x.tenant_id)[0], x.tenant_id, e.currentTarget) }, tenantCell(x.tenant_id))
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

function renderGaps(d) {
  const title = t("gaps.title", { n: fmt.number(d.gaps.length) });
  if (d.gaps.length === 0) {
    return h("div", { class: "block", id: "gaps" }, h("h3", {}, title), h("p", { class: "note" }, t("gaps.none")));
  }
  const reason = (r) => {
    const k = `reason.${r}`;
    return t(k) === k ? r : t(k);
  };
  return h("div", { class: "block", id: "gaps" },
    h("h3", { id: "gaps-title" }, title),
    h("p", { class: "note" }, t("gaps.note")),
    tableWrap("gaps-title", h("table", { class: "data compact", id: "gaps-table" },
      h("thead", {}, h("tr", {}, ["col.deployment", "col.gpu", "col.node", "col.from", "col.to", "col.reason"].map((k) => h("th", { scope: "col" }, t(k))))),
      h("tbody", {}, d.gaps.map((g) => h("tr", { "data-gpu": g.gpu_uuid },
        h("td", { class: "mono" }, g.deployment_id), h("td", { class: "mono" }, g.gpu_uuid), h("td", {}, g.node),
        h("td", { "data-value": g.from }, fmt.dateTime(g.from)), h("td", { "data-value": g.to }, fmt.dateTime(g.to)),
        h("td", {}, badge(reason(g.reason), "warn"))))))));
}

function renderFindings(d) {
  return h("div", { class: "block", id: "findings" },
    h("h3", {}, t("findings.title", { n: fmt.number(d.findings.length) })),
    h("ul", { class: "findings" }, d.findings.map((f) => {
      const k = `finding.${f.code}`;
      return h("li", { "data-code": f.code }, badge(t(k) === k ? f.code : t(k), "warn"), " ", h("span", {}, f.message));
    })));
}

function tableWrap(labelledBy, table) {
  // Focusable so that a keyboard user can scroll a wide table; labelled by its heading.
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-labelledby": labelledBy }, table);
}

// ---------------------------------------------------------------------------------------------- policies

/** The tenant's budgets (all tenants' for the platform): what is spent, held and left this month. */
async function loadBudgets() {
  const seq = ++state.budgets.seq;
  try {
    const data = await api("/v1/finops/budgets");
    if (seq !== state.budgets.seq) return;
    state.budgets.items = (data.items || []).filter((x) => x.status !== "closed");
  } catch {
    if (seq !== state.budgets.seq) return;
    state.budgets.items = [];
  }
  renderBudgets();
}

function renderBudgets() {
  const slot = $("#budgets-slot");
  if (!slot) return;
  const items = state.budgets.items;
  if (items.length === 0) {
    slot.replaceChildren();
    return;
  }
  const cols = [["col.budget", false], ["col.tenant", false], ["col.limit", true], ["col.spent", true], ["col.held", true],
    ["col.left", true], ["col.thresholds", false]];
  const rows = items.map((x) => {
    const c = x.current;
    const cur = x.limit.currency;
    const reached = new Set(c ? c.crossed_pct : []);
    return h("tr", { "data-budget": x.id, "data-currency": cur },
      h("th", { scope: "row" }, h("span", { class: "strong" }, x.name), h("span", { class: "sub muted" }, x.id, " ",
        badge(x.enforce ? t("budget.enforced") : t("budget.alertOnly"), x.enforce ? "info" : "muted"))),
      h("td", {}, tenantCell(x.tenant_id)),
      num(x.limit.amount, fmt.money(x.limit.amount, cur), "limit"),
      num(c ? c.spent.amount : "", c ? fmt.money(c.spent.amount, cur) : "—", "spent"),
      num(c ? c.held.amount : "", c ? fmt.money(c.held.amount, cur) : "—", "held"),
      num(c ? c.left.amount : "", c ? fmt.money(c.left.amount, cur) : "—", "left"),
      h("td", { "data-col": "thresholds" }, x.thresholds_pct.map((p) =>
        badge(`${p} %`, reached.has(p) ? "warn" : "muted", reached.has(p) ? t("budget.reached") : null))));
  });
  slot.replaceChildren(h("section", { id: "budgets", class: "card", "aria-labelledby": "budgets-title" },
    h("div", { class: "section-head" }, h("h2", { id: "budgets-title" }, t("budgets.title"))),
    tableWrap("budgets-title", h("table", { class: "data", id: "budgets-table" },
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(k))))),
      h("tbody", {}, rows))),
    h("p", { class: "note" }, t("budgets.note"))));
}

async function loadPolicies() {
  const seq = ++state.policies.seq;
  state.policies.status = "loading";
  renderPolicies();
  try {
    const data = await api("/v1/finops/allocation-policies");
    if (seq !== state.policies.seq) return;
    state.policies = { ...state.policies, status: "ok", items: data.items || [], error: null };
  } catch (e) {
    if (seq !== state.policies.seq) return;
    state.policies = { ...state.policies, status: "error", error: e };
  }
  renderPolicies();
}

function renderPolicies() {
  const body = $("#policies-body");
  if (!body) return;
  const p = state.policies;
  const refresh = $("#policies-refresh");
  if (refresh) refresh.classList.toggle("spinning", p.status === "loading");
  body.setAttribute("aria-busy", p.status === "loading" ? "true" : "false");
  if (p.status === "loading" || p.status === "idle") {
    body.replaceChildren(loading(t("policies.loading"), "policies-loading"));
    return;
  }
  if (p.status === "error") {
    body.replaceChildren(errorPanel(t("error.policies"), p.error, () => loadPolicies(), "policies-error"));
    return;
  }
  if (p.items.length === 0) {
    const admin = POLICY_ADMINS.has(state.who.role);
    body.replaceChildren(emptyState("empty-policies", ICON_EMPTY, t("empty.policies.title"),
      admin ? `${t("empty.policies.hint")} ${t("empty.policies.adminHint")}` : t("empty.policies.hint")));
    return;
  }
  const cols = [["col.name", false], ["col.pattern", false], ["col.model", false], ["col.hourly", true], ["col.overhead", true], ["col.pue", true], ["col.energyPrice", true], ["col.enabled", false]];
  body.replaceChildren(tableWrap("policies-title", h("table", { class: "data", id: "policies-table" },
    h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(k))))),
    h("tbody", {}, p.items.map((x) => h("tr", { "data-policy": x.id, "data-status": x.status },
      h("th", { scope: "row" }, h("span", { class: "strong" }, x.name), h("span", { class: "sub muted" },
        `${x.id} · ${x.effective_to ? t("until", { from: fmt.date(x.effective_from), to: fmt.date(x.effective_to) }) : t("since", { date: fmt.date(x.effective_from) })}`)),
      h("td", { class: "mono" }, x.deployment_pattern),
      h("td", {}, x.gpu_model ?? h("span", { class: "muted" }, t("policies.anyModel"))),
      num(x.gpu_hourly_cost, fmt.price(x.gpu_hourly_cost, x.currency), "gpu_hourly_cost"),
      num(x.overhead_pct, fmt.number(x.overhead_pct, 4), "overhead_pct"),
      num(x.pue, fmt.number(x.pue, 4), "pue"),
      num(x.energy_kwh_price, fmt.price(x.energy_kwh_price, x.currency), "energy_kwh_price"),
      h("td", { "data-col": "enabled", "data-value": String(x.enabled) }, x.enabled ? t("yes") : t("no"), " ",
        badge(t(`status.${x.status}`), x.status === "active" ? "ok" : "muted"))))))));
}

// ---------------------------------------------------------------------------------------------- states

function loading(text, id) {
  return h("div", { class: "loading", role: "status", id }, h("span", { class: "spinner", "aria-hidden": "true" }), text);
}

function emptyState(id, icon, title, hint) {
  return h("div", { class: "state empty", id },
    h("div", { class: "state-icon" }, svgIcon(icon, { width: 36, height: 36 })),
    h("p", { class: "state-title" }, title),
    h("p", { class: "muted" }, hint));
}

function failureFacts(e) {
  const code = e.shownCode();
  if (!code && !e.requestId) return null;
  return h("dl", { class: "facts" },
    code ? [h("dt", {}, t("error.code")), h("dd", { class: "mono", "data-fact": "code" }, code)] : null,
    e.requestId ? [h("dt", {}, t("error.request")), h("dd", { class: "mono", "data-fact": "request-id" }, e.requestId)] : null);
}

function errorPanel(title, e, retry, id) {
  return h("div", { class: "error-panel", role: "alert", id },
    h("div", { class: "state-icon" }, svgIcon(ICON_ALERT, { width: 28, height: 28 })),
    h("div", {},
      h("p", { class: "state-title" }, title),
      h("p", { class: "error-text" }, e instanceof ApiFailure ? e.text() : String(e)),
      e instanceof ApiFailure ? failureFacts(e) : null,
      h("button", { type: "button", class: "btn", onclick: retry, "data-action": "retry" }, t("error.retry"))));
}

// ---------------------------------------------------------------------------------------------- the form

const FIELDS = [
  { name: "name", label: "form.name", required: true, autocomplete: "off" },
  { name: "deployment_pattern", label: "form.pattern", hint: "form.patternHint", mono: true },
  { name: "gpu_model", label: "form.model", hint: "form.modelHint", placeholder: "L40S" },
  { name: "currency", label: "form.currency", hint: "form.currencyHint", maxlength: 3, autocapitalize: "characters", mono: true },
  { name: "gpu_hourly_cost", label: "form.hourly", hint: "form.hourlyHint", required: true, decimal: true, placeholder: "2.10" },
  { name: "overhead_pct", label: "form.overhead", decimal: true },
  { name: "pue", label: "form.pue", hint: "form.pueHint", decimal: true, placeholder: "1.4" },
  { name: "energy_kwh_price", label: "form.energy", hint: "form.energyHint", decimal: true, placeholder: "0.18" },
  { name: "effective_from", label: "form.effective", hint: "form.effectiveHint", type: "date" },
];

// ---------------------------------------------------------------------------------------------- explain
function openExplain(deployment, tenant, opener) {
  state.explain = { open: true, deployment, tenant, status: "idle", data: null, error: null, opener: opener?.id ?? null, seq: state.explain.seq, pods: null };
  renderExplain();
  loadExplain();
  const close = $("#explain-close");
  if (close) close.focus();
}

function closeExplain() {
  if (!state.explain.open) return;
  const opener = state.explain.opener;
  state.explain = { ...state.explain, open: false };
  renderExplain();
  const back = opener && document.getElementById(opener);
  if (back) back.focus();
}

async function loadExplain() {
  const e = state.explain;
  const a = state.alloc.data;
  if (!e.open || !a) return;
  const seq = ++state.explain.seq;
  state.explain.status = "loading";
  renderExplain();
  const q = new URLSearchParams({ deployment_id: e.deployment, from: a.from, to: a.to });
  // A platform administrator looking at a tenant's charge sees it as that tenant does (the others summed).
  if (e.tenant && POLICY_ADMINS.has(state.who.role) && !state.viewAs) q.set("tenant_id", e.tenant);
  // Where it ran: the deployment's pods, nodes, GPUs and how each pod's share of a shared GPU was obtained
  // (GET /v1/finops/gpu/usage), read after the explanation (one allocation slot at a time); a failure there
  // leaves the explanation shown, the section saying so.
  const where = new URLSearchParams({ from: a.from, to: a.to, group_by: "pod,node,gpu,share", filter: `deployment:${e.deployment}` });
  try {
    const data = await api(`/v1/finops/gpu/allocation/explain?${q}`);
    const found = await api(`/v1/finops/gpu/usage?${where}`).then((rows) => ({ data: rows }), (error) => ({ error }));
    if (seq !== state.explain.seq) return;
    state.explain = { ...state.explain, status: "ok", data, error: null, pods: found };
  } catch (err) {
    if (seq !== state.explain.seq) return;
    state.explain = { ...state.explain, status: "error", data: null, error: err, pods: null };
  }
  renderExplain();
}

/** How a pod's share of its GPU was obtained (SPEC §11): equal shares (an estimate) stand out. */
function shareCell(share) {
  if (!share) return h("td", {}, t("explain.unrecorded"));
  const note = t(`share.${share}.note`);
  return h("td", { "data-col": "share", "data-value": share, title: note },
    share === "equal" ? badge(t("share.equal"), "warn", note) : t(`share.${share}`));
}

/** The deployment's pods, nodes and GPUs: GPU time, the share of a shared GPU and how it was obtained (a platform
 * reader sees the share), busy share, energy and the cost each was given. */
function explainPods(pods, viewer) {
  if (!pods) return [];
  const id = "explain-pods-title";
  const head = h("h3", { id }, t("explain.where"));
  if (pods.error) return [head, errorPanel(t("error.where"), pods.error, () => loadExplain(), "explain-pods-error")];
  const rows = pods.data.rows;
  if (!rows.length) return viewer ? [head, h("p", { class: "note", id: "explain-pods-none" }, t("explain.whereShared"))] : [];
  const cost = (r) => r.cost[0] ?? null;
  const currency = rows.map(cost).find(Boolean)?.currency ?? null;
  const total = currency ? fmt.sum(rows.map((r) => cost(r)?.amount ?? "0")) : null;
  const label = (v) => v ?? t("explain.unrecorded");
  return [head,
    h("p", { class: "note" }, t("explain.whereNote")),
    tableWrap(id, h("table", { class: "data compact", id: "explain-pods" },
      h("thead", {}, h("tr", {}, ["col.pod", "col.node", "col.gpu", "col.shareMethod", "col.gpuShare", "col.gpuHours", "col.busy", "col.energy", "col.cost"]
        .map((k, i) => h("th", { scope: "col", class: i > 3 ? "num" : null }, t(k))))),
      h("tbody", {}, rows.map((r) => {
        const busy = fmt.divide(String(r.busy_gpu_seconds), String(r.gpu_seconds), 4);
        const share = r.gpu_share === undefined ? null : String(r.gpu_share);
        return h("tr", { "data-pod": r.group.pod ?? "", "data-gpu": r.group.gpu ?? "", "data-share": r.group.share ?? "" },
          h("th", { scope: "row", class: "mono" }, label(r.group.pod)),
          h("td", { class: "mono" }, label(r.group.node)),
          h("td", { class: "mono" }, r.group.gpu),
          shareCell(r.group.share),
          num(share ?? "", share === null ? "—" : fmt.percent(share), "gpu_share"),
          num(String(r.gpu_seconds), fmt.number(fmt.divide(String(r.gpu_seconds), "3600", 3), 3), "gpu_hours"),
          num(busy ?? "", busy === null ? "—" : fmt.percent(busy), "busy"),
          num(String(r.energy_wh), fmt.number(fmt.divide(String(r.energy_wh), "1000", 3), 3), "energy_kwh"),
          num(cost(r)?.amount ?? "", cost(r) ? fmt.money(cost(r).amount, cost(r).currency) : "—", "cost"));
      })),
      total === null ? null : h("tfoot", {}, h("tr", {},
        h("th", { scope: "row", colspan: "8" }, t("col.total")),
        num(total, fmt.money(total, currency), "cost"))))),
  ];
}

/** The deployments a tenant is charged on in the loaded allocation, its largest charge first. */
function tenantDeployments(tenant) {
  const a = state.alloc.data;
  if (!a) return [];
  const charged = new Map();
  for (const i of a.items) {
    if (i.tenant_id !== tenant || fmt.compare(i.allocated.amount, "0") <= 0) continue;
    charged.set(i.deployment_id, fmt.sum([charged.get(i.deployment_id) ?? "0", i.allocated.amount]));
  }
  return [...charged.keys()].sort((x, y) => fmt.compare(charged.get(y), charged.get(x)) || x.localeCompare(y));
}

/** A party of the explanation, as people know it. */
function partyLabel(key) {
  if (key === "others") return t("explain.others");
  if (key === "idle") return t("explain.idle");
  return tenantLabel(key);
}

function partyKey(p) {
  if (p.kind === "tenant") return p.tenant_id;
  return p.kind === "other_tenants" ? "others" : "idle";
}

function renderExplain() {
  const root = $("#explain-root");
  if (!root) return;
  const e = state.explain;
  syncModal();
  if (!e.open) {
    root.replaceChildren();
    return;
  }
  const d = e.data;
  const row = d?.rounding?.[0];
  // Whose view it is: the tenant clicked, or the tenant the page is read as (a tenant's key, or "View as"). Then
  // the title says what that tenant pays on the deployment (its rounding lines); else the deployment's cost.
  const viewer = e.tenant ?? state.viewAs ?? state.who?.tenant_id ?? null;
  const charged = row && viewer
    ? fmt.sum(row.lines.filter((l) => l.party.tenant_id === viewer).map((l) => l.amount))
    : null;
  const title = !row
    ? t("explain.titleShort", { deployment: e.deployment })
    : charged !== null
      ? t("explain.titleTenant", { tenant: tenantLabel(viewer), amount: fmt.money(charged, row.currency), deployment: e.deployment })
      : t("explain.title", { deployment: e.deployment, cost: fmt.money(row.cost, row.currency) });
  let body;
  if (e.status === "error") body = errorPanel(t("error.explain"), e.error, () => loadExplain(), "explain-error");
  else if (e.status !== "ok") body = loading(t("explain.loading"), "explain-loading");
  else body = explainBody(d, explainPods(e.pods, viewer));
  const picker = e.tenant ? tenantDeployments(e.tenant) : [];
  const focusedId = root.contains(document.activeElement) ? document.activeElement.id : null;
  root.replaceChildren(h("div", { class: "drawer-layer", onkeydown: explainKeys },
    h("div", { class: "backdrop", onclick: closeExplain }),
    h("aside", { class: "drawer wide", role: "dialog", "aria-modal": "true", "aria-labelledby": "explain-title", id: "explain-dialog" },
      h("div", { class: "drawer-head" },
        h("h2", { id: "explain-title" }, title),
        h("button", { type: "button", class: "btn icon", id: "explain-close", "aria-label": t("form.close"), title: t("form.close"), onclick: closeExplain }, svgIcon(ICON_CLOSE))),
      h("p", { class: "muted", id: "explain-intro" }, viewer ? t("explain.forTenant", { tenant: tenantLabel(viewer) }) : t("explain.intro")),
      picker.length > 1 ? h("div", { class: "field" },
        h("label", { for: "explain-deployment" }, t("explain.pick")),
        h("select", { id: "explain-deployment", onchange: (ev) => { state.explain.deployment = ev.target.value; loadExplain(); } },
          picker.map((dep) => h("option", { value: dep, selected: dep === e.deployment }, dep)))) : null,
      h("div", { id: "explain-body", "aria-busy": e.status === "loading" ? "true" : "false" }, body))));
  // A re-render replaces what had the focus: keep it in the dialog (Escape and Tab work from there).
  if (!root.contains(document.activeElement)) {
    const keep = focusedId && document.getElementById(focusedId);
    (keep || $("#explain-close"))?.focus();
  }
}

function explainBody(d, where) {
  const parts = [];
  for (const p of d.policies) {
    parts.push(h("p", { class: "note", "data-policy": p.policy_id }, t("explain.policy", {
      policy: p.name, hourly: fmt.price(p.gpu_hourly_cost, p.currency), overhead: fmt.number(p.overhead_pct, 4),
      energy: fmt.price(p.energy_kwh_price, p.currency), pue: fmt.number(p.pue, 4),
    })));
  }
  const keys = [...new Set(d.buckets.flatMap((b) => b.priced.flatMap((p) => p.parties.map((x) => partyKey(x.party)))))];
  const color = (k) => (k === "idle" ? "#6B6B6B" : k === "others" ? "#9C8A00" : PALETTE[Math.max(0, keys.indexOf(k)) % 6]);
  for (const r of d.rounding) parts.push(renderExplainChart(d.buckets, r.currency, partyLabel, color));
  parts.push(...where);
  for (const r of d.rounding) {
    const id = `explain-rounding-title-${r.currency}`;
    parts.push(h("h3", { id }, t("explain.rounding", { currency: r.currency })),
      h("p", { class: "note" }, t("explain.roundingNote", { exact: fmt.price(r.exact, r.currency), cost: fmt.money(r.cost, r.currency) })),
      tableWrap(id, h("table", { class: "data compact", id: "explain-rounding", "data-currency": r.currency },
        h("thead", {}, h("tr", {}, ["col.party", "col.policy", "col.exact", "col.scaled", "col.floor", "col.remainder", "col.amount"]
          .map((k, i) => h("th", { scope: "col", class: i > 1 ? "num" : null }, t(k))))),
        h("tbody", {}, r.lines.map((l) => h("tr", { "data-party": partyKey(l.party) },
          h("th", { scope: "row" }, partyLabel(partyKey(l.party))),
          h("td", { class: "mono" }, l.policy_id),
          num(l.exact, fmt.price(l.exact, r.currency), "exact"),
          num(l.scaled, fmt.price(l.scaled, r.currency), "scaled"),
          num(l.floor, fmt.money(l.floor, r.currency), "floor"),
          num(l.remainder_unit, fmt.money(l.remainder_unit, r.currency), "remainder_unit"),
          num(l.amount, fmt.money(l.amount, r.currency), "amount")))))));
  }
  // Hour by hour: each bucket's measure, claims and exact parts.
  const rows = [];
  for (const b of d.buckets) {
    for (const p of b.priced) {
      const lines = b.owner ? [{ party: b.owner, cost: p.cost }] : p.parties;
      const span = String(lines.length + (b.owner ? 0 : 1));
      lines.forEach((x, i) => {
        const c = b.claims.find((cl) => partyKey(cl.party) === partyKey(x.party));
        rows.push(h("tr", { "data-start": b.start, "data-party": partyKey(x.party) },
          i === 0 ? h("th", { scope: "row", rowspan: span }, fmt.dateTime(b.start)) : null,
          i === 0 ? h("td", { class: "num", rowspan: span, "data-col": "gpu_seconds", "data-value": String(b.gpu_seconds) }, fmt.number(b.gpu_seconds, 3)) : null,
          h("td", {}, partyLabel(partyKey(x.party))),
          num(c ? String(c.tokens) : "", c ? fmt.number(c.tokens) : "—", "tokens"),
          num(c ? String(c.share) : "", c ? fmt.percent(c.share) : b.owner ? fmt.percent(1) : "—", "share"),
          num(x.cost, fmt.price(x.cost, p.currency), "part")));
      });
      if (!b.owner) {
        rows.push(h("tr", { "data-start": b.start, "data-party": "idle" },
          h("td", {}, t("explain.idle")), num("", "", "tokens"), num("", "", "share"), num(p.idle, fmt.price(p.idle, p.currency), "part")));
      }
    }
  }
  const label = t("explain.buckets", { n: fmt.number(d.buckets.length) });
  parts.push(h("details", { class: "chart-data", id: "explain-buckets" },
    h("summary", {}, label),
    h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label },
      h("table", { class: "data compact" },
        h("thead", {}, h("tr", {}, ["col.hour", "col.gpuSeconds", "col.party", "col.tokens", "col.share", "col.part"]
          .map((k, i) => h("th", { scope: "col", class: [1, 3, 4, 5].includes(i) ? "num" : null }, t(k))))),
        h("tbody", {}, rows)))));
  return parts;
}

function explainKeys(e) {
  dialogKeys(e, "#explain-dialog button, #explain-dialog select, #explain-dialog summary, #explain-dialog [tabindex='0']", closeExplain);
}

// ---------------------------------------------------------------------------------------------- the form
function openForm(opener) {
  state.form = { open: true, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: opener?.id || "policy-new" };
  renderDrawer();
  $("#f-name").focus();
}

function closeForm() {
  if (!state.form.open) return;
  const opener = state.form.opener;
  state.form = { ...state.form, open: false, busy: false };
  renderDrawer();
  const back = opener && document.getElementById(opener);
  if (back) back.focus();
}

/** Keeps what was typed (before a re-render in another language). */
function captureForm() {
  if (!state.form.open) return;
  for (const f of FIELDS) {
    const el = document.getElementById(`f-${f.name}`);
    if (el) state.form.values[f.name] = el.value;
  }
  const en = document.getElementById("f-enabled");
  if (en) state.form.values.enabled = en.checked;
}

/** While a dialog (the policy form or an explanation) is open, the page behind it is inert. */
function syncModal() {
  const open = state.form.open || state.explain.open;
  document.body.classList.toggle("modal-open", open);
  for (const el of [$("#main"), document.querySelector(".topbar")]) if (el) el.inert = open;
}

function renderDrawer() {
  const root = $("#drawer-root");
  if (!root) return;
  const f = state.form;
  syncModal();
  if (!f.open) {
    root.replaceChildren();
    return;
  }
  const fieldEls = FIELDS.map((spec) => field(spec, f.values[spec.name], f.errors[spec.name]));
  const unplaced = Object.entries(f.errors).filter(([k]) => !FIELDS.some((x) => x.name === k));
  root.replaceChildren(h("div", { class: "drawer-layer", onkeydown: drawerKeys },
    h("div", { class: "backdrop", onclick: closeForm }),
    h("aside", { class: "drawer", role: "dialog", "aria-modal": "true", "aria-labelledby": "form-title", "aria-describedby": "form-intro", id: "policy-drawer" },
      h("div", { class: "drawer-head" },
        h("h2", { id: "form-title" }, t("form.title")),
        h("button", { type: "button", class: "btn icon", id: "form-close", "aria-label": t("form.close"), title: t("form.close"), onclick: closeForm }, svgIcon(ICON_CLOSE))),
      h("p", { class: "muted", id: "form-intro" }, t("form.intro")),
      h("form", { id: "policy-form", novalidate: true, onsubmit: submitForm },
        f.failure || unplaced.length ? h("div", { class: "form-error", id: "form-error", role: "alert", tabindex: "-1" },
          h("p", { class: "error-text" }, f.failure ? f.failure.text() : t("form.fix")),
          unplaced.length ? h("ul", {}, unplaced.map(([k, v]) => h("li", {}, h("span", { class: "mono" }, k), ": ", errorText(v)))) : null,
          f.failure ? failureFacts(f.failure) : null) : null,
        fieldEls,
        h("div", { class: "field check" },
          h("input", { type: "checkbox", id: "f-enabled", name: "enabled", checked: f.values.enabled }),
          h("label", { for: "f-enabled" }, t("form.enabled"))),
        h("div", { class: "drawer-foot" },
          h("button", { type: "button", class: "btn ghost", id: "form-cancel", onclick: closeForm }, t("form.cancel")),
          h("button", { type: "submit", class: "btn primary", id: "form-create", disabled: f.busy }, f.busy ? t("form.creating") : t("form.create")))))));
}

function field(spec, value, error) {
  const id = `f-${spec.name}`;
  const described = [spec.hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(" ") || null;
  return h("div", { class: `field${error ? " invalid" : ""}`, "data-field": spec.name },
    h("label", { for: id }, t(spec.label), spec.required ? h("span", { class: "req" }, ` (${t("form.required")})`) : null),
    h("input", {
      id, name: spec.name, type: spec.type || "text", value: value ?? "",
      inputmode: spec.decimal ? "decimal" : null, placeholder: spec.placeholder, maxlength: spec.maxlength,
      autocomplete: "off", spellcheck: "false", autocapitalize: spec.autocapitalize || "off",
      required: spec.required || null, "aria-required": spec.required ? "true" : null,
      "aria-invalid": error ? "true" : null, "aria-describedby": described, class: spec.mono ? "mono" : null,
    }),
    spec.hint ? h("p", { class: "hint", id: `${id}-hint` }, t(spec.hint)) : null,
    error ? h("p", { class: "field-error", id: `${id}-error` }, errorText(error)) : null);
}

/** A field's error: one of ours ({k, p}: a message key and its parameters) or the service's reasons. */
function errorText(e) {
  if (e.server) return t("v.server", { reason: e.server.join("; ") });
  return t(e.k, e.p ? Object.fromEntries(Object.entries(e.p).map(([k, v]) => [k, k === "field" ? t(v) : v])) : {});
}

function drawerKeys(e) {
  dialogKeys(e, "#policy-drawer button:not([disabled]), #policy-drawer input, #policy-drawer [tabindex='-1'].form-error", closeForm);
}

/** A modal dialog's keys: Escape closes it (`close`), Tab and Shift+Tab go round what `focusable` selects. */
function dialogKeys(e, focusable, close) {
  if (e.key === "Escape") {
    e.preventDefault();
    close();
    return;
  }
  if (e.key !== "Tab") return;
  const els = [...document.querySelectorAll(focusable)].filter((el) => !el.hidden && el.tabIndex >= 0);
  if (els.length === 0) return;
  const first = els[0];
  const last = els[els.length - 1];
  if (e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}

/** A decimal as typed (a comma is taken as the decimal point), or null when it is not a number. */
function decimalInput(text) {
  const s = text.trim().replace(",", ".");
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(s)) return null;
  return s.replace(/^\+/, "").replace(/\.$/, "").replace(/^(-?)\./, "$10.");
}

/** The client-side checks of the portal guide; returns {errors, body}. */
function validatePolicy(v) {
  const errors = {};
  const body = {};
  const name = v.name.trim();
  if (!name) errors.name = { k: "v.name" };
  else body.name = name;
  body.deployment_pattern = v.deployment_pattern.trim() || "*";
  if (v.gpu_model.trim()) body.gpu_model = v.gpu_model.trim();
  const currency = v.currency.trim();
  if (!/^[A-Z]{3}$/.test(currency)) errors.currency = { k: "v.currency" };
  else body.currency = currency;
  const decimals = [
    ["gpu_hourly_cost", "form.hourly", "2.10", true],
    ["overhead_pct", "form.overhead", "18", false],
    ["pue", "form.pue", "1.4", false],
    ["energy_kwh_price", "form.energy", "0.18", false],
  ];
  for (const [key, label, example, required] of decimals) {
    const raw = String(v[key] ?? "");
    if (!raw.trim()) {
      if (required) errors[key] = { k: "v.hourlyRequired" };
      continue;
    }
    const d = decimalInput(raw);
    if (d === null) {
      errors[key] = { k: "v.number", p: { field: label, example } };
    } else if (key === "pue" && fmt.compare(d, "1") < 0) {
      errors[key] = { k: "v.pue" };
    } else if (fmt.compare(d, "0") < 0) {
      errors[key] = { k: "v.negative", p: { field: label } };
    } else {
      body[key] = d;
    }
  }
  if (v.effective_from) body.effective_from = v.effective_from;
  body.enabled = Boolean(v.enabled);
  return { errors, body };
}

async function submitForm(event) {
  event.preventDefault();
  if (state.form.busy) return;
  captureForm();
  const { errors, body } = validatePolicy(state.form.values);
  state.form.errors = errors;
  state.form.failure = null;
  if (Object.keys(errors).length > 0) {
    renderDrawer();
    focusFirstError();
    return;
  }
  state.form.busy = true;
  renderDrawer();
  try {
    const created = await api("/v1/finops/allocation-policies", { method: "POST", body });
    state.form = { ...state.form, busy: false, errors: {}, failure: null, values: { ...FORM_DEFAULTS } };
    closeForm();
    toast(t("toast.created", { name: body.name, id: created.id }));
    loadPolicies();
    loadAllocation();
  } catch (e) {
    const failure = e instanceof ApiFailure ? e : new ApiFailure({ code: "network" });
    const fieldErrors = {};
    for (const d of failure.details || []) {
      if (d && typeof d.field === "string") {
        (fieldErrors[d.field] ??= { server: [] }).server.push(String(d.reason ?? ""));
      }
    }
    state.form = { ...state.form, busy: false, errors: fieldErrors, failure };
    renderDrawer();
    focusFirstError();
  }
}

function focusFirstError() {
  const first = FIELDS.find((f) => state.form.errors[f.name]);
  const el = first ? document.getElementById(`f-${first.name}`) : document.getElementById("form-error");
  if (el) el.focus();
}

// ---------------------------------------------------------------------------------------------- start

setLang(initialLang(), false);
boot();
