// @ts-check
// One issued statement as a printable page (issue 41), opened by the address `/finops/gpu#statement/<number>`:
// the issuer, the number, the tenant, the month, when and by whom it was issued, its lines (deployment, policy,
// GPU-hours, energy, amount) and totals per currency, then, only when data arrived after it was issued, the
// adjustments and the adjusted totals. Every figure is the API's decimal text, formatted, never summed here.
// Printing (the Print button, or the browser's) keeps the statement alone on A4 paper (app.css, `@media print`).
// `statementModel` is pure, for portal-tests/statements.test.mjs.

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h } from "../dom.js";
import { state, update, READERS } from "../store.js";
import { api, tableWrap, loading, errorPanel } from "./common.js";
import { statementTenant, NIL_TENANT } from "./statements.js";

/** @typedef {import("../store.js").Json} Json */
/** A figure as the API gave it (`value`) and as printed (`shown`). @typedef {{ value: string, shown: string }} Figure */
/** @typedef {{ kind: string, deployment: string, policyId: string, policy: string, gpuHours: Figure, energy: Figure,
 *   amount: Figure & { currency: string } }} PrintedLine */
/** @typedef {{ label: string, value: string, currency: string, shown: string }} PrintedTotal */

/** What an address's hash opens: a statement (`#statement/ST-2026-10-0001`), else the page. @param {string} hash */
export function routeOf(hash) {
  const m = /^#statement\/(.+)$/.exec(hash);
  if (!m) return { statement: null };
  try {
    return { statement: decodeURIComponent(m[1]) };
  } catch {
    return { statement: m[1] };
  }
}

/** Follows the address (at start and on every hash change): opens the statement it names, or goes back to the
 * page (at its Statements section when the hash says so). */
export function followHash() {
  const route = routeOf(location.hash);
  if (route.statement !== state.route.statement) {
    update({ route });
    loadStatement();
    window.scrollTo(0, 0);
  }
  if (location.hash === "#statements") {
    const el = document.getElementById("statements");
    if (el) el.scrollIntoView();
  }
}

/** Loads the statement the route names (for a reader signed in). */
export async function loadStatement() {
  const number = state.route.statement;
  if (!number || !state.who || !READERS.has(state.who.role)) return;
  const seq = state.statement.seq + 1;
  update({ statement: { status: "loading", data: null, error: null, seq, number } });
  try {
    const data = await api(`/v1/finops/gpu/statements/${encodeURIComponent(number)}`);
    if (seq !== state.statement.seq) return;
    update({ statement: { status: "ok", data, error: null, seq, number } });
  } catch (e) {
    if (seq !== state.statement.seq) return;
    update({ statement: { status: "error", data: null, error: e, seq, number } });
  }
}

/** An amount as printed: its currency's format; an adjustment's sign always shown. @param {Json} m Money
 * @param {boolean} signed */
function amountText(m, signed) {
  const text = fmt.money(m.amount, m.currency);
  return signed && fmt.compare(m.amount, "0") > 0 ? `+${text}` : text;
}

/** A quantity as printed: up to the API's six places. @param {string} v @param {boolean} signed */
function quantityText(v, signed) {
  const text = fmt.number(v, 6);
  return signed && fmt.compare(v, "0") > 0 ? `+${text}` : text;
}

/** The last day `[from, to)` holds, for a period printed with both ends inclusive. @param {string} to */
function lastDay(to) {
  const d = new Date(to);
  return Number.isNaN(d.getTime()) ? String(to) : new Date(d.getTime() - 1).toISOString().slice(0, 10);
}

/**
 * What the statement prints, in the current language: its texts, and each figure as the API gave it (`value`)
 * beside its text (`shown`). `policyNames`: the policies known, by id (a line shows its policy's name when known).
 * @param {Json} st a Statement @param {Map<string, string>} [policyNames]
 */
export function statementModel(st, policyNames = new Map()) {
  /** @param {Json} l a StatementLine @returns {PrintedLine} */
  const line = (l) => {
    const adj = l.kind === "adjustment";
    return {
      kind: l.kind,
      deployment: l.deployment_id,
      policyId: l.policy_id,
      policy: policyNames.get(l.policy_id) ?? l.policy_id,
      gpuHours: { value: l.gpu_hours, shown: quantityText(l.gpu_hours, adj) },
      energy: { value: l.energy_kwh, shown: quantityText(l.energy_kwh, adj) },
      amount: { value: l.amount.amount, currency: l.amount.currency, shown: amountText(l.amount, adj) },
    };
  };
  /** @param {Json[]} ms Money @param {string} key @returns {PrintedTotal[]} */
  const totals = (ms, key) => ms.map((m) => ({ label: t(key, { currency: m.currency }), value: m.amount, currency: m.currency, shown: amountText(m, false) }));
  return {
    issuer: t("brand"),
    title: t("st.heading", { number: st.number }),
    tenant: statementTenant(st),
    tenantId: st.tenant_id,
    platform: st.tenant_id === NIL_TENANT,
    period: fmt.month(st.period),
    range: t("st.range", { from: fmt.date(st.from), to: fmt.date(lastDay(st.to)) }),
    issued: t("st.issuedBy", { at: fmt.dateTime(st.issued_at), by: st.issued_by }),
    lines: st.lines.map(line),
    totals: totals(st.totals, "st.total"),
    adjustments: st.adjustments.length === 0 ? null : {
      title: t("st.adjustments", { asOf: fmt.dateTime(st.as_of) }),
      lines: st.adjustments.map(line),
      totals: totals(st.adjusted_totals, "st.adjustedTotal"),
    },
  };
}

/** The frame of the statement's page, into `#main` (its body is drawn by `renderStatement`). */
export function renderStatementPage() {
  return h("div", { class: "page statement-page" },
    h("div", { class: "statement-tools no-print" },
      h("a", { href: "#statements", class: "btn ghost", id: "statement-back" }, "← ", t("st.back")),
      h("button", { type: "button", class: "btn primary", id: "statement-print", onclick: () => window.print() }, t("st.print"))),
    h("div", { id: "statement-body" }));
}

/** A table of lines and its totals. @param {string} id @param {string} labelledBy @param {PrintedLine[]} lines
 * @param {PrintedTotal[]} totals */
function linesTable(id, labelledBy, lines, totals) {
  const cols = [["st.col.deployment", false], ["st.col.policy", false], ["st.col.gpuHours", true], ["st.col.energy", true], ["st.col.amount", true]];
  return tableWrap(labelledBy, h("table", { class: "data statement-lines", id },
    h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
    h("tbody", {}, lines.map((l) => h("tr", { "data-deployment": l.deployment, "data-policy": l.policyId, "data-kind": l.kind },
      h("th", { scope: "row", class: "mono" }, l.deployment),
      h("td", { title: l.policyId }, l.policy),
      h("td", { class: "num", "data-col": "gpu_hours", "data-value": l.gpuHours.value }, l.gpuHours.shown),
      h("td", { class: "num", "data-col": "energy_kwh", "data-value": l.energy.value }, l.energy.shown),
      h("td", { class: "num", "data-col": "amount", "data-value": l.amount.value, "data-currency": l.amount.currency }, l.amount.shown)))),
    h("tfoot", {}, totals.map((x) => h("tr", { "data-currency": x.currency },
      h("th", { scope: "row", colspan: "4" }, x.label),
      h("td", { class: "num strong", "data-col": "total", "data-value": x.value }, x.shown))))));
}

/** The statement, into `#statement-body`. @param {HTMLElement} el */
export function renderStatement(el) {
  const a = state.statement;
  el.setAttribute("aria-busy", a.status === "loading" ? "true" : "false");
  if (a.status === "error") {
    el.replaceChildren(errorPanel(t("error.statement"), a.error, () => loadStatement(), "statement-error"));
    return;
  }
  if (a.status !== "ok") {
    el.replaceChildren(loading(t("st.loadingOne"), "statement-loading"));
    return;
  }
  const st = a.data;
  const names = new Map(state.policies.items.map((/** @type {Json} */ p) => [p.id, p.name]));
  const m = statementModel(st, names);
  document.title = `${m.title} · ${m.issuer}`;
  const running = h("div", { class: "running" }, m.issuer, " · ", m.title, " · ", m.tenant, " · ", m.period);
  const doc = [
    h("header", { class: "statement-head" },
      h("p", { class: "issuer", id: "statement-issuer" }, m.issuer),
      h("h1", { id: "statement-title" }, m.title),
      h("dl", { class: "statement-facts" },
        h("dt", {}, t("st.tenant")),
        h("dd", { id: "statement-tenant", "data-value": m.tenantId }, h("span", { class: "strong" }, m.tenant), h("span", { class: "sub mono" }, m.tenantId)),
        h("dt", {}, t("st.period")),
        h("dd", { id: "statement-period", "data-value": st.period }, h("span", { class: "strong" }, m.period), h("span", { class: "sub" }, m.range)),
        h("dt", {}, t("st.issuedAt")),
        h("dd", { id: "statement-issued", "data-value": st.issued_at }, m.issued))),
    h("section", { class: "statement-part", "aria-labelledby": "statement-lines-title" },
      h("h2", { id: "statement-lines-title" }, t("st.lines")),
      m.lines.length === 0 ? h("p", { class: "muted" }, t("st.noLines")) : null,
      linesTable("statement-lines", "statement-lines-title", m.lines, m.totals)),
    m.adjustments ? h("section", { class: "statement-part", id: "statement-adjustments", "aria-labelledby": "statement-adjustments-title" },
      h("h2", { id: "statement-adjustments-title" }, m.adjustments.title),
      linesTable("statement-adjustments-table", "statement-adjustments-title", m.adjustments.lines, m.adjustments.totals)) : null,
    h("p", { class: "note" }, t("st.note")),
  ];
  // The running header repeats atop every printed page: the frame's head, hidden on screen.
  el.replaceChildren(h("article", { class: "statement card", id: "statement", "data-number": st.number, "aria-labelledby": "statement-title" },
    h("table", { class: "print-frame", role: "presentation" },
      h("thead", {}, h("tr", {}, h("td", {}, running))),
      h("tbody", {}, h("tr", {}, h("td", {}, doc))))));
}
