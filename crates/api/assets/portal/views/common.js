// @ts-check
// Pieces every section uses: the API called with this tab's key, tenant names, table cells, badges, the loading,
// empty and error states, the toast, and the keys of a modal dialog.

import { t } from "../i18n.js";
import { call, ApiFailure } from "../api.js";
import { h, svgIcon, $, ICON_ALERT } from "../dom.js";
import { state } from "../store.js";

/** @typedef {import("../dom.js").Child} Child */

/**
 * Calls the API with this tab's key, signed in to the tenant viewed as (if any).
 * @param {string} path
 * @param {{ method?: string, body?: unknown }} [opts]
 * @returns {Promise<any>}
 */
export function api(path, opts = {}) {
  return call(path, { ...opts, key: state.key, tenant: state.viewAs });
}

/** A tenant as people know it: its registered name, else its id. @param {string | null} id */
export function tenantLabel(id) {
  const known = id ? state.tenants.get(id) : null;
  return known ? known.name : id;
}

/** A tenant cell: the name, with the id on hover; a tenant never registered shows its id. @param {string} id */
export function tenantCell(id) {
  const known = state.tenants.get(id);
  if (!known) return h("span", { class: "mono", title: id }, id);
  return h("span", { class: "tenant-name", title: id, "data-slug": known.slug }, known.name,
    h("span", { class: "muted slug" }, ` ${known.slug}`));
}

/** A role's name in the chosen language (else its code). @param {string} role */
export function roleName(role) {
  const key = `role.${role}`;
  const name = t(key);
  return name === key ? role : name;
}

/** @type {ReturnType<typeof setTimeout> | undefined} */
let toastTimer;

/** Says something for a few seconds (a polite live region): an effect, not part of the state. @param {string} message */
export function toast(message) {
  const el = $("#toast");
  el.textContent = message;
  el.classList.add("shown");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove("shown"), 6000);
}

/**
 * A figure's cell: `value` (exact, in data-value) shown as `text`.
 * @param {string | null | undefined} value
 * @param {Child} text
 * @param {string} col
 * @param {{ class?: string, title?: string, after?: Child }} [extra]
 */
export function num(value, text, col, extra = {}) {
  return h("td", { class: `num${extra.class ? ` ${extra.class}` : ""}`, "data-col": col, "data-value": value ?? "", title: extra.title }, text, extra.after ?? null);
}

/** @param {string} text @param {string} tone @param {string | null} [title] */
export function badge(text, tone, title) {
  return h("span", { class: `badge ${tone}`, title }, text);
}

/** A wide table's frame: focusable so that a keyboard user can scroll it; labelled by its heading.
 * @param {string} labelledBy @param {HTMLElement} table */
export function tableWrap(labelledBy, table) {
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-labelledby": labelledBy }, table);
}

/** @param {string} text @param {string} [id] */
export function loading(text, id) {
  return h("div", { class: "loading", role: "status", id }, h("span", { class: "spinner", "aria-hidden": "true" }), text);
}

/** @param {string} id @param {string[]} icon @param {string} title @param {string} hint */
export function emptyState(id, icon, title, hint) {
  return h("div", { class: "state empty", id },
    h("div", { class: "state-icon" }, svgIcon(icon, { width: 36, height: 36 })),
    h("p", { class: "state-title" }, title),
    h("p", { class: "muted" }, hint));
}

/** The error's code and request id, when it has them. @param {ApiFailure} e */
export function failureFacts(e) {
  const code = e.shownCode();
  if (!code && !e.requestId) return null;
  return h("dl", { class: "facts" },
    code ? [h("dt", {}, t("error.code")), h("dd", { class: "mono", "data-fact": "code" }, code)] : null,
    e.requestId ? [h("dt", {}, t("error.request")), h("dd", { class: "mono", "data-fact": "request-id" }, e.requestId)] : null);
}

/**
 * A failed load: what failed, the API's message and facts, and a Retry button.
 * @param {string} title @param {unknown} e @param {() => void} retry @param {string} [id]
 */
export function errorPanel(title, e, retry, id) {
  return h("div", { class: "error-panel", role: "alert", id },
    h("div", { class: "state-icon" }, svgIcon(ICON_ALERT, { width: 28, height: 28 })),
    h("div", {},
      h("p", { class: "state-title" }, title),
      h("p", { class: "error-text" }, e instanceof ApiFailure ? e.text() : String(e)),
      e instanceof ApiFailure ? failureFacts(e) : null,
      h("button", { type: "button", class: "btn", onclick: retry, "data-action": "retry" }, t("error.retry"))));
}

/**
 * A modal dialog's keys: Escape closes it (`close`), Tab and Shift+Tab go round what `focusable` selects.
 * @param {KeyboardEvent} e @param {string} focusable @param {() => void} close
 */
export function dialogKeys(e, focusable, close) {
  if (e.key === "Escape") {
    e.preventDefault();
    close();
    return;
  }
  if (e.key !== "Tab") return;
  const els = /** @type {HTMLElement[]} */ ([...document.querySelectorAll(focusable)]).filter((el) => !el.hidden && el.tabIndex >= 0);
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
