// @ts-check
// The budgets of this month (all tenants' for the platform): what is spent, held and left; shown only when some
// are in force or scheduled.

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h } from "../dom.js";
import { state, update } from "../store.js";
import { api, num, badge, tableWrap, tenantCell } from "./common.js";

/** @typedef {import("../store.js").Json} Json */

export async function loadBudgets() {
  const seq = state.budgets.seq + 1;
  update({ budgets: { ...state.budgets, seq } });
  try {
    const data = await api("/v1/finops/budgets");
    if (seq !== state.budgets.seq) return;
    update({ budgets: { seq, items: (data.items || []).filter((/** @type {Json} */ x) => x.status !== "closed") } });
  } catch {
    if (seq !== state.budgets.seq) return;
    update({ budgets: { seq, items: [] } });
  }
}

/** The budgets section, into `#budgets-slot` (empty without budgets). @param {HTMLElement} slot */
export function renderBudgets(slot) {
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
      h("td", { "data-col": "thresholds" }, x.thresholds_pct.map((/** @type {number} */ p) =>
        badge(`${p} %`, reached.has(p) ? "warn" : "muted", reached.has(p) ? t("budget.reached") : null))));
  });
  slot.replaceChildren(h("section", { id: "budgets", class: "card", "aria-labelledby": "budgets-title" },
    h("div", { class: "section-head" }, h("h2", { id: "budgets-title" }, t("budgets.title"))),
    tableWrap("budgets-title", h("table", { class: "data", id: "budgets-table" },
      h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
      h("tbody", {}, rows))),
    h("p", { class: "note" }, t("budgets.note"))));
}
