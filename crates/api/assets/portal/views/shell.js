// @ts-check
// The page's frame: the top bar (brand, breadcrumb, who is signed in, the language, Sign out), the main region
// (sign-in, not for this role, or the allocation page), and the roots of the dialogs and the toast.

import { t, lang, setLang, LANGS } from "../i18n.js";
import { h } from "../dom.js";
import { state, update, READERS } from "../store.js";
import { roleName, loading, errorPanel } from "./common.js";
import { renderSignIn, signOut, boot } from "./signin.js";
import { renderDenied } from "./denied.js";
import { renderPage } from "./page.js";
import { renderStatementPage } from "./statement.js";
import { captureForm } from "./policy-form.js";

/** The frame, into `#app` (its regions are filled by their own views). @param {HTMLElement} app */
export function renderShell(app) {
  document.title = `${t("page.title")} · ${t("brand")}`;
  app.replaceChildren(
    h("a", { class: "skip", href: "#main" }, t("skip")),
    renderTopbar(),
    h("main", { id: "main", tabindex: "-1" }),
    h("div", { id: "drawer-root" }),
    h("div", { id: "explain-root" }),
    h("div", { id: "toast", class: "toast", role: "status", "aria-live": "polite" }),
  );
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
        h("select", { id: "lang", onchange: (/** @type {Event} */ e) => changeLang(/** @type {HTMLSelectElement} */ (e.target).value) },
          LANGS.map((l) => h("option", { value: l, selected: l === lang() }, t(`lang.${l}`))))),
      who ? h("button", { type: "button", class: "btn ghost", id: "signout", onclick: signOut }, t("signout")) : null));
}

/** The main region for the state: loading, the boot's failure, the sign-in, not for this role, the statement the
 * address names, or the page.
 * @param {HTMLElement} main */
export function renderMain(main) {
  if (state.boot.status === "loading") {
    main.replaceChildren(loading(t("signin.busy")));
  } else if (state.boot.status === "error") {
    main.replaceChildren(h("div", { class: "page narrow" }, errorPanel(t("signin.title"), state.boot.error, boot)));
  } else if (!state.who) {
    main.replaceChildren(renderSignIn());
  } else if (!READERS.has(state.who.role)) {
    main.replaceChildren(renderDenied());
  } else if (state.route.statement) {
    main.replaceChildren(renderStatementPage());
  } else {
    document.title = `${t("page.title")} · ${t("brand")}`;
    main.replaceChildren(renderPage());
  }
}

/** Another language: everything is drawn again in it, the focus kept on the same control. @param {string} l */
function changeLang(l) {
  const form = captureForm();
  const focusedId = document.activeElement && document.activeElement.id;
  setLang(l, true);
  update({ form });
  const again = focusedId && document.getElementById(focusedId);
  if (again) again.focus();
}
