// @ts-check
// The allocation policies that price GPU time (a platform administrator creates them with the form).

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h, ICON_EMPTY } from "../dom.js";
import { state, update, POLICY_ADMINS } from "../store.js";
import { api, num, badge, tableWrap, loading, emptyState, errorPanel } from "./common.js";

/** @typedef {import("../store.js").Json} Json */

export async function loadPolicies() {
  const seq = state.policies.seq + 1;
  update({ policies: { ...state.policies, seq, status: "loading" } });
  try {
    const data = await api("/v1/finops/allocation-policies");
    if (seq !== state.policies.seq) return;
    update({ policies: { ...state.policies, status: "ok", items: data.items || [], error: null } });
  } catch (e) {
    if (seq !== state.policies.seq) return;
    update({ policies: { ...state.policies, status: "error", error: e } });
  }
}

/** The policies section's body, into `#policies-body` (and its refresh button spinning while loading).
 * @param {HTMLElement} body */
export function renderPolicies(body) {
  const p = state.policies;
  document.querySelector("#policies-refresh")?.classList.toggle("spinning", p.status === "loading");
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
    h("thead", {}, h("tr", {}, cols.map(([k, n]) => h("th", { scope: "col", class: n ? "num" : null }, t(String(k)))))),
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
