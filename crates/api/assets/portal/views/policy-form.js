// @ts-check
// The New allocation policy form (platform administrators), in a drawer: the portal guide's client-side checks,
// then the service's answer (its reasons shown beside the fields they name).

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { ApiFailure } from "../api.js";
import { h, svgIcon, $, ICON_CLOSE } from "../dom.js";
import { state, update, FORM_DEFAULTS } from "../store.js";
import { api, failureFacts, toast, dialogKeys } from "./common.js";
import { loadPolicies } from "./policies.js";
import { loadAllocation } from "./allocation.js";
import { loadAdvice } from "./advice.js";

/** @typedef {import("../store.js").FormValues} FormValues */
/** @typedef {import("../store.js").FieldError} FieldError */

/**
 * @typedef {{ name: keyof FormValues, label: string, hint?: string, required?: boolean, decimal?: boolean, mono?: boolean,
 *   placeholder?: string, maxlength?: number, autocapitalize?: string, autocomplete?: string, type?: string }} FieldSpec
 */

/** @type {FieldSpec[]} */
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

/** @param {HTMLElement | null} opener */
export function openForm(opener) {
  update({ form: { open: true, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: opener?.id || "policy-new" } });
  $("#f-name").focus();
}

/** Closes the form (with `patch` applied to its state), the focus back on what opened it.
 * @param {Partial<import("../store.js").State["form"]>} [patch] */
function closeForm(patch = {}) {
  if (!state.form.open) return;
  const opener = state.form.opener;
  update({ form: { ...state.form, ...patch, open: false, busy: false } });
  const back = opener && document.getElementById(opener);
  if (back) back.focus();
}

/** The form's state with what is typed in its fields (the fields are not redrawn while typing). */
export function captureForm() {
  if (!state.form.open) return state.form;
  const values = { ...state.form.values };
  for (const f of FIELDS) {
    const el = /** @type {HTMLInputElement | null} */ (document.getElementById(`f-${f.name}`));
    if (el) /** @type {Record<string, string | boolean>} */ (values)[f.name] = el.value;
  }
  const en = /** @type {HTMLInputElement | null} */ (document.getElementById("f-enabled"));
  if (en) values.enabled = en.checked;
  return { ...state.form, values };
}

/** The drawer for the state, into `#drawer-root` (empty when closed). @param {HTMLElement} root */
export function renderDrawer(root) {
  const f = state.form;
  if (!f.open) {
    root.replaceChildren();
    return;
  }
  const fieldEls = FIELDS.map((spec) => field(spec, f.values[spec.name], f.errors[spec.name]));
  const unplaced = Object.entries(f.errors).filter(([k]) => !FIELDS.some((x) => x.name === k));
  root.replaceChildren(h("div", { class: "drawer-layer", onkeydown: drawerKeys },
    h("div", { class: "backdrop", onclick: () => closeForm() }),
    h("aside", { class: "drawer", role: "dialog", "aria-modal": "true", "aria-labelledby": "form-title", "aria-describedby": "form-intro", id: "policy-drawer" },
      h("div", { class: "drawer-head" },
        h("h2", { id: "form-title" }, t("form.title")),
        h("button", { type: "button", class: "btn icon", id: "form-close", "aria-label": t("form.close"), title: t("form.close"), onclick: () => closeForm() }, svgIcon(ICON_CLOSE))),
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
          h("button", { type: "button", class: "btn ghost", id: "form-cancel", onclick: () => closeForm() }, t("form.cancel")),
          h("button", { type: "submit", class: "btn primary", id: "form-create", disabled: f.busy }, f.busy ? t("form.creating") : t("form.create")))))));
}

/** @param {FieldSpec} spec @param {string | boolean | undefined} value @param {FieldError | undefined} error */
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

/** A field's error: one of ours ({k, p}: a message key and its parameters) or the service's reasons.
 * @param {FieldError} e */
function errorText(e) {
  if (e.server) return t("v.server", { reason: e.server.join("; ") });
  return t(e.k ?? "", e.p ? Object.fromEntries(Object.entries(e.p).map(([k, v]) => [k, k === "field" ? t(v) : v])) : {});
}

/** @param {KeyboardEvent} e */
function drawerKeys(e) {
  dialogKeys(e, "#policy-drawer button:not([disabled]), #policy-drawer input, #policy-drawer [tabindex='-1'].form-error", () => closeForm());
}

/** A decimal as typed (a comma is taken as the decimal point), or null when it is not a number.
 * @param {string} text */
export function decimalInput(text) {
  const s = text.trim().replace(",", ".");
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(s)) return null;
  return s.replace(/^\+/, "").replace(/\.$/, "").replace(/^(-?)\./, "$10.");
}

/** The client-side checks of the portal guide. @param {FormValues} v
 * @returns {{ errors: Record<string, FieldError>, body: Record<string, string | boolean> }} */
export function validatePolicy(v) {
  /** @type {Record<string, FieldError>} */
  const errors = {};
  /** @type {Record<string, string | boolean>} */
  const body = {};
  const name = v.name.trim();
  if (!name) errors.name = { k: "v.name" };
  else body.name = name;
  body.deployment_pattern = v.deployment_pattern.trim() || "*";
  if (v.gpu_model.trim()) body.gpu_model = v.gpu_model.trim();
  const currency = v.currency.trim();
  if (!/^[A-Z]{3}$/.test(currency)) errors.currency = { k: "v.currency" };
  else body.currency = currency;
  /** @type {[keyof FormValues, string, string, boolean][]} */
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

/** @param {SubmitEvent} event */
async function submitForm(event) {
  event.preventDefault();
  if (state.form.busy) return;
  const form = captureForm();
  const { errors, body } = validatePolicy(form.values);
  if (Object.keys(errors).length > 0) {
    update({ form: { ...form, errors, failure: null } });
    focusFirstError();
    return;
  }
  update({ form: { ...form, errors, failure: null, busy: true } });
  try {
    const created = await api("/v1/finops/allocation-policies", { method: "POST", body });
    closeForm({ errors: {}, failure: null, values: { ...FORM_DEFAULTS } });
    toast(t("toast.created", { name: String(body.name), id: created.id }));
    loadPolicies();
    // A new policy prices what was unpriced: the savings and the forecast change with it.
    loadAdvice(loadAllocation());
  } catch (e) {
    const failure = e instanceof ApiFailure ? e : new ApiFailure({ code: "network" });
    /** @type {Record<string, FieldError>} */
    const fieldErrors = {};
    for (const d of failure.details || []) {
      if (d && typeof d.field === "string") {
        (fieldErrors[d.field] ??= { server: [] }).server?.push(String(d.reason ?? ""));
      }
    }
    update({ form: { ...state.form, busy: false, errors: fieldErrors, failure } });
    focusFirstError();
  }
}

function focusFirstError() {
  const first = FIELDS.find((f) => state.form.errors[f.name]);
  const el = first ? document.getElementById(`f-${first.name}`) : document.getElementById("form-error");
  if (el) el.focus();
}
