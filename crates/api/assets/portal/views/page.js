// @ts-check
// The allocation page's frame: its title, the period asked, "View as" a tenant for a platform administrator, and
// the sections (allocation, budgets, savings with forecast and anomalies, policies, statements) whose bodies
// their own views fill.

import { t, lang } from "../i18n.js";
import { call } from "../api.js";
import { h, svgIcon, $, ICON_REFRESH, ICON_PLUS } from "../dom.js";
import { state, update, POLICY_ADMINS } from "../store.js";
import { tenantLabel } from "./common.js";
import { loadAllocation } from "./allocation.js";
import { loadPolicies } from "./policies.js";
import { loadBudgets } from "./budgets.js";
import { loadAdvice } from "./advice.js";
import { loadStatements } from "./statements.js";
import { openForm } from "./policy-form.js";

export function renderPage() {
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
    h("section", { id: "advice", class: "card", "aria-labelledby": "advice-title" },
      h("div", { class: "section-head" }, h("h2", { id: "advice-title" }, t("advice.title"))),
      h("div", { class: "block", id: "recommendations" },
        h("h3", { id: "recs-title" }, t("advice.recs.title")), h("div", { id: "recs-body" })),
      h("div", { class: "block", id: "forecast" },
        h("h3", { id: "forecast-title" }, t("advice.fc.title")), h("div", { id: "forecast-body" })),
      h("div", { class: "block", id: "anomalies" },
        h("h3", { id: "anomalies-title" }, t("advice.an.title")), h("div", { id: "anomalies-body" }))),
    h("section", { id: "policies", class: "card", "aria-labelledby": "policies-title" },
      h("div", { class: "section-head" },
        h("h2", { id: "policies-title" }, t("policies.title")),
        h("div", { class: "actions" },
          h("button", {
            type: "button", class: "btn icon", id: "policies-refresh", title: t("policies.refresh"),
            "aria-label": t("policies.refresh"), onclick: () => loadPolicies(),
          }, svgIcon(ICON_REFRESH)),
          canCreate ? h("button", { type: "button", class: "btn primary", id: "policy-new", onclick: (/** @type {Event} */ e) => openForm(/** @type {HTMLElement} */ (e.currentTarget)) },
            svgIcon(ICON_PLUS, { width: 18, height: 18 }), t("policies.new")) : null)),
      h("div", { id: "policies-body" })),
    h("section", { id: "statements", class: "card", "aria-labelledby": "statements-title" },
      h("div", { class: "section-head" },
        h("h2", { id: "statements-title" }, t("st.title")),
        h("div", { class: "actions", id: "statements-actions" })),
      h("p", { class: "note" }, t("st.lead")),
      h("div", { id: "statements-issued" }),
      h("div", { id: "statements-body" })));
}

function renderPeriod() {
  const p = state.period;
  const onChange = () => {
    update({ period: { ...state.period, from: $("#period-from").value, to: $("#period-to").value } });
    loadAdvice(loadAllocation());
  };
  return h("form", { class: "period", id: "period", novalidate: true, onsubmit: (/** @type {Event} */ e) => { e.preventDefault(); onChange(); } },
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

/** The period's message, in place (the inputs keep what is typed). @param {HTMLElement} el */
export function renderPeriodError(el) {
  const error = state.period.error;
  el.hidden = !error;
  el.textContent = error ? t(error) : "";
}

/** The registered tenants the key may see, for names; without them the page shows ids. */
export async function loadTenants() {
  let tenants;
  try {
    const data = await call("/v1/tenants", { key: state.key });
    tenants = new Map((data.items || []).map((/** @type {any} */ x) => [x.id, x]));
  } catch {
    tenants = new Map();
  }
  update({ tenants });
}

/** Whether this caller may view the page as a tenant: a platform_admin (no tenant of its own). */
function canViewAs() {
  return state.who && state.who.role === "platform_admin" && !state.who.tenant_id;
}

/** The "View as" picker, into `#view-as-slot`. @param {HTMLElement} slot */
export function renderViewAs(slot) {
  if (!canViewAs()) {
    slot.replaceChildren();
    return;
  }
  const ids = new Set([...state.tenants.keys(), ...state.seenTenants]);
  if (state.viewAs) ids.add(state.viewAs);
  // Registered tenants by name, then those only seen in data, by id.
  const options = [...ids].map((id) => ({ id, label: tenantLabel(id), named: state.tenants.has(id) }))
    .sort((a, b) => (Number(b.named) - Number(a.named)) || a.label.localeCompare(b.label, lang()));
  /** @param {Event} e */
  const onChange = (e) => {
    update({ viewAs: /** @type {HTMLSelectElement} */ (e.target).value || null });
    loadAdvice(loadAllocation());
    loadPolicies();
    loadBudgets();
    loadStatements();
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
