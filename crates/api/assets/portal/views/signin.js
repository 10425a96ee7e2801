// @ts-check
// Signing in with an API key (kept for this browser tab only), a reload with a key in the tab, signing out.

import { t } from "../i18n.js";
import { call, ApiFailure, storedKey, storeKey, forgetKey } from "../api.js";
import { h, $ } from "../dom.js";
import { state, update, READERS, FORM_DEFAULTS } from "../store.js";
import { failureFacts } from "./common.js";
import { loadTenants } from "./page.js";
import { loadAllocation } from "./allocation.js";
import { loadAdvice } from "./advice.js";
import { loadPolicies } from "./policies.js";
import { loadBudgets } from "./budgets.js";
import { loadStatements } from "./statements.js";
import { loadStatement } from "./statement.js";

export function renderSignIn() {
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

/** @param {SubmitEvent} event */
async function signIn(event) {
  event.preventDefault();
  const key = $("#signin-key").value.trim();
  if (!key) {
    update({ signin: { ...state.signin, error: "signin.required" } });
    $("#signin-key").focus();
    return;
  }
  update({ signin: { busy: true, error: null } });
  try {
    const who = await call("/v1/auth/whoami", { key });
    storeKey(key);
    update({ key, who, signin: { busy: false, error: null } });
    enter();
    $("#main").focus();
  } catch (e) {
    update({ signin: { busy: false, error: e instanceof ApiFailure ? e : new ApiFailure({ code: "network" }) } });
    const field = $("#signin-key");
    field.value = key;
    field.focus();
  }
}

export function signOut() {
  forgetKey();
  update({
    key: null,
    who: null,
    tenants: new Map(),
    seenTenants: new Set(),
    viewAs: null,
    alloc: { status: "idle", data: null, error: null, seq: state.alloc.seq + 1 },
    policies: { status: "idle", items: [], error: null, seq: state.policies.seq + 1 },
    budgets: { items: [], seq: state.budgets.seq + 1 },
    recommendations: { status: "idle", data: null, error: null, seq: state.recommendations.seq + 1 },
    forecast: { status: "idle", data: null, error: null, seq: state.forecast.seq + 1 },
    anomalies: { status: "idle", data: null, error: null, seq: state.anomalies.seq + 1 },
    statements: { status: "idle", data: null, error: null, seq: state.statements.seq + 1 },
    issue: { busy: false, period: null, data: null, error: null },
    statement: { status: "idle", data: null, error: null, seq: state.statement.seq + 1, number: null },
    form: { open: false, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: null },
    signin: { busy: false, error: null },
  });
  $("#signin-key").focus();
}

/** After sign-in (or a reload with a key in this tab): the page for the caller's role, its data loading. */
function enter() {
  if (READERS.has(state.who.role)) {
    loadTenants();
    loadAdvice(loadAllocation());
    loadPolicies();
    loadBudgets();
    loadStatements();
    loadStatement();
  }
}

/** The start: a key kept in this tab signs in again; without one, the sign-in form. */
export async function boot() {
  const key = storedKey();
  if (!key) {
    update({ boot: { status: "idle", error: null } });
    return;
  }
  update({ boot: { status: "loading", error: null } });
  try {
    const who = await call("/v1/auth/whoami", { key });
    update({ who, key, boot: { status: "idle", error: null } });
    enter();
  } catch (e) {
    if (e instanceof ApiFailure && e.code !== "network" && e.status < 500) {
      // The key of this tab no longer works: back to the sign-in, saying why.
      forgetKey();
      update({ boot: { status: "idle", error: null }, signin: { busy: false, error: e } });
    } else {
      update({ boot: { status: "error", error: e } });
    }
  }
}
