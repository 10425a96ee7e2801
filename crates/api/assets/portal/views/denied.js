// @ts-check
// A role that does not read FinOps (developer, viewer, security officer): why the page is not theirs.

import { t } from "../i18n.js";
import { h, svgIcon, ICON_LOCK } from "../dom.js";
import { state } from "../store.js";
import { roleName } from "./common.js";

export function renderDenied() {
  return h("div", { class: "page narrow" },
    h("section", { class: "state denied", id: "denied", "aria-labelledby": "denied-title" },
      h("div", { class: "state-icon" }, svgIcon(ICON_LOCK, { width: 40, height: 40 })),
      h("h1", { id: "denied-title" }, t("denied.title")),
      h("p", {}, t("denied.body", { role: roleName(state.who.role) })),
      h("p", { class: "muted" }, t("denied.hint"))));
}
