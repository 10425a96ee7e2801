// @ts-check
// The issued statements (issue 41): each tenant's closed month, numbered, audited and never changed. The list the
// key may see, newest period first (a number opens the printable statement, views/statement.js), and for a
// platform administrator the action that issues last month's. Totals are the API's decimal text, shown as they
// come (never summed here). The pure helpers are exported for portal-tests/statements.test.mjs.

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h, svgIcon, ICON_EMPTY, ICON_REFRESH } from "../dom.js";
import { state, update, STATEMENT_ISSUERS } from "../store.js";
import { api, tableWrap, loading, emptyState, errorPanel, tenantLabel } from "./common.js";

/** @typedef {import("../store.js").Json} Json */

/** The tenant of the statement of unallocated (idle) capacity: the platform's own. */
export const NIL_TENANT = "00000000-0000-0000-0000-000000000000";

/** The last month that is over at `now`: the one before its month (UTC), as `YYYY-MM`. @param {Date} [now] */
export function lastMonth(now = new Date()) {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
}

/** Newest period first, then by number (the API's order, kept whatever comes). @param {Json[]} items */
export function newestFirst(items) {
  const order = (/** @type {string} */ a, /** @type {string} */ b) => (a < b ? -1 : a > b ? 1 : 0);
  return [...items].sort((a, b) => order(b.period, a.period) || order(a.number, b.number));
}

/** A statement's tenant as printed: its name as issued (else as registered, else its id); the nil uuid is the
 * platform's unallocated capacity. @param {Json} x a Statement or StatementSummary */
export function statementTenant(x) {
  if (x.tenant_id === NIL_TENANT) return t("st.unallocated");
  return x.tenant_name || tenantLabel(x.tenant_id) || x.tenant_id;
}

/** Where a statement opens: the page's address with its number. @param {string} number */
export function statementHref(number) {
  return `#statement/${encodeURIComponent(number)}`;
}

/** Whether this caller issues statements: a platform administrator seeing the whole platform. */
function canIssue() {
  return Boolean(state.who && STATEMENT_ISSUERS.has(state.who.role) && !state.who.tenant_id && !state.viewAs);
}

export async function loadStatements() {
  const seq = state.statements.seq + 1;
  update({ statements: { ...state.statements, status: "loading", seq } });
  try {
    const data = await api("/v1/finops/gpu/statements");
    if (seq !== state.statements.seq) return;
    update({ statements: { status: "ok", data, error: null, seq } });
  } catch (e) {
    if (seq !== state.statements.seq) return;
    update({ statements: { status: "error", data: null, error: e, seq } });
  }
}

/** Issues the statements of the last month that is over (each tenant's once: those issued before come back as
 * such), then reloads the list. */
export async function issueStatements() {
  const period = lastMonth();
  update({ issue: { busy: true, period, data: null, error: null } });
  try {
    const data = await api("/v1/finops/gpu/statements", { method: "POST", body: { period } });
    update({ issue: { busy: false, period, data, error: null } });
    loadStatements();
  } catch (e) {
    update({ issue: { busy: false, period, data: null, error: e } });
  }
}

/** The section's buttons, into `#statements-actions`: Refresh, and Issue for a platform administrator.
 * @param {HTMLElement} el */
export function renderStatementActions(el) {
  const busy = state.issue.busy;
  const buttons = [h("button", {
    type: "button", class: "btn icon", id: "statements-refresh", title: t("st.refresh"), "aria-label": t("st.refresh"),
    onclick: () => loadStatements(),
  }, svgIcon(ICON_REFRESH))];
  if (canIssue()) {
    buttons.push(h("button", { type: "button", class: "btn primary", id: "statements-issue", disabled: busy, "aria-busy": busy ? "true" : null, onclick: issueStatements },
      busy ? t("st.issuing") : t("st.issue", { month: fmt.month(lastMonth()) })));
  }
  el.replaceChildren(...buttons);
}

/** A list of statement numbers, each opening its statement. @param {Json[]} items @param {string} kind */
function numbers(items, kind) {
  return h("ul", { class: "st-numbers", "data-kind": kind }, items.map((x) =>
    h("li", { "data-statement": x.number }, h("a", { href: statementHref(x.number), class: "mono" }, x.number),
      " ", h("span", { class: "muted" }, statementTenant(x)))));
}

/** What the last Issue did, into `#statements-issued`: the numbers issued and those issued before, or why it
 * failed. @param {HTMLElement} el */
export function renderIssued(el) {
  const { data, error, period } = state.issue;
  if (error) {
    el.replaceChildren(errorPanel(t("error.issue"), error, issueStatements, "statements-issue-error"));
    return;
  }
  if (!data || !period) {
    el.replaceChildren();
    return;
  }
  const month = fmt.month(period);
  const parts = [];
  if (data.issued.length > 0) parts.push(h("p", { class: "strong" }, t("st.issuedNew", { month })), numbers(data.issued, "issued"));
  if (data.already_issued.length > 0) parts.push(h("p", {}, t("st.issuedBefore", { month })), numbers(data.already_issued, "already_issued"));
  if (parts.length === 0) parts.push(h("p", {}, t("st.issuedNone", { month })));
  el.replaceChildren(h("div", { class: "notice", id: "statements-result", role: "status" }, parts));
}

/** The list, into `#statements-body`. @param {HTMLElement} el */
export function renderStatements(el) {
  const a = state.statements;
  el.setAttribute("aria-busy", a.status === "loading" ? "true" : "false");
  if (a.status === "error") {
    el.replaceChildren(errorPanel(t("error.statements"), a.error, () => loadStatements(), "statements-error"));
    return;
  }
  if (a.status !== "ok") {
    el.replaceChildren(loading(t("st.loading"), "statements-loading"));
    return;
  }
  const items = newestFirst(a.data.statements);
  if (items.length === 0) {
    el.replaceChildren(emptyState("empty-statements", ICON_EMPTY, t("st.empty"), canIssue() ? t("st.emptyHintAdmin") : t("st.emptyHint")));
    return;
  }
  const cols = [["st.col.number", false], ["st.col.tenant", false], ["st.col.period", false], ["st.col.issued", false], ["st.col.totals", true]];
  el.replaceChildren(tableWrap("statements-title", h("table", { class: "data", id: "statements-table" },
    h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
    h("tbody", {}, items.map((x) => h("tr", { "data-statement": x.number, "data-tenant": x.tenant_id, "data-period": x.period },
      h("th", { scope: "row" }, h("a", { href: statementHref(x.number), class: "mono", "data-col": "number" }, x.number)),
      h("td", { title: x.tenant_id }, statementTenant(x)),
      h("td", { "data-value": x.period }, fmt.month(x.period)),
      h("td", { "data-value": x.issued_at }, fmt.dateTime(x.issued_at)),
      h("td", { class: "num", "data-col": "totals" }, x.totals.map((/** @type {Json} */ m) =>
        h("span", { class: "sub", "data-currency": m.currency, "data-value": m.amount }, fmt.money(m.amount, m.currency))))))))));
}
