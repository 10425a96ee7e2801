// @ts-check
// Why a deployment costs what it does, hour by hour, in a dialog: the policies, the chart of the parts, where it
// ran (pods, nodes, GPUs), the rounding of each party's amount, and every hour's measure, claims and parts. For a
// tenant's charge, the deployments it is charged on are offered to pick from.

import { t } from "../i18n.js";
import * as fmt from "../format.js";
import { h, svgIcon, $, ICON_CLOSE } from "../dom.js";
import { PALETTE, renderExplainChart } from "../chart.js";
import { state, update, POLICY_ADMINS } from "../store.js";
import { api, num, badge, tableWrap, loading, errorPanel, tenantLabel, dialogKeys } from "./common.js";

/** @typedef {import("../store.js").Json} Json */

/**
 * Opens the explanation of `deployment` (for `tenant`'s charge, if given), from the button `opener`.
 * @param {string} deployment @param {string | null} tenant @param {HTMLElement | null} opener
 */
export function openExplain(deployment, tenant, opener) {
  update({ explain: { open: true, deployment, tenant, status: "idle", data: null, error: null, opener: opener?.id ?? null, seq: state.explain.seq, pods: null } });
  loadExplain();
  const close = $("#explain-close");
  if (close) close.focus();
}

export function closeExplain() {
  if (!state.explain.open) return;
  const opener = state.explain.opener;
  update({ explain: { ...state.explain, open: false } });
  const back = opener && document.getElementById(opener);
  if (back) back.focus();
}

async function loadExplain() {
  const e = state.explain;
  const a = state.alloc.data;
  if (!e.open || !a || !e.deployment) return;
  const seq = state.explain.seq + 1;
  update({ explain: { ...state.explain, seq, status: "loading" } });
  const q = new URLSearchParams({ deployment_id: e.deployment, from: a.from, to: a.to });
  // A platform administrator looking at a tenant's charge sees it as that tenant does (the others summed).
  if (e.tenant && POLICY_ADMINS.has(state.who.role) && !state.viewAs) q.set("tenant_id", e.tenant);
  // Where it ran: the deployment's pods, nodes, GPUs and how each pod's share of a shared GPU was obtained
  // (GET /v1/finops/gpu/usage), read after the explanation (one allocation slot at a time); a failure there
  // leaves the explanation shown, the section saying so.
  const where = new URLSearchParams({ from: a.from, to: a.to, group_by: "pod,node,gpu,share", filter: `deployment:${e.deployment}` });
  try {
    const data = await api(`/v1/finops/gpu/allocation/explain?${q}`);
    const found = await api(`/v1/finops/gpu/usage?${where}`).then((rows) => ({ data: rows }), (error) => ({ error }));
    if (seq !== state.explain.seq) return;
    update({ explain: { ...state.explain, status: "ok", data, error: null, pods: found } });
  } catch (err) {
    if (seq !== state.explain.seq) return;
    update({ explain: { ...state.explain, status: "error", data: null, error: err, pods: null } });
  }
}

/** How a pod's share of its GPU was obtained (SPEC §11): equal shares (an estimate) stand out.
 * @param {string | null | undefined} share */
function shareCell(share) {
  if (!share) return h("td", {}, t("explain.unrecorded"));
  const note = t(`share.${share}.note`);
  return h("td", { "data-col": "share", "data-value": share, title: note },
    share === "equal" ? badge(t("share.equal"), "warn", note) : t(`share.${share}`));
}

/** The deployment's pods, nodes and GPUs: GPU time, the share of a shared GPU and how it was obtained (a platform
 * reader sees the share), busy share, energy and the cost each was given.
 * @param {{ data?: Json, error?: any } | null} pods @param {string | null} viewer @returns {HTMLElement[]} */
function explainPods(pods, viewer) {
  if (!pods) return [];
  const id = "explain-pods-title";
  const head = h("h3", { id }, t("explain.where"));
  if (pods.error) return [head, errorPanel(t("error.where"), pods.error, () => loadExplain(), "explain-pods-error")];
  /** @type {Json[]} */
  const rows = pods.data.rows;
  if (!rows.length) return viewer ? [head, h("p", { class: "note", id: "explain-pods-none" }, t("explain.whereShared"))] : [];
  const cost = (/** @type {Json} */ r) => r.cost[0] ?? null;
  const currency = rows.map(cost).find(Boolean)?.currency ?? null;
  const total = currency ? fmt.sum(rows.map((r) => cost(r)?.amount ?? "0")) : null;
  const label = (/** @type {string | null | undefined} */ v) => v ?? t("explain.unrecorded");
  return [head,
    h("p", { class: "note" }, t("explain.whereNote")),
    tableWrap(id, h("table", { class: "data compact", id: "explain-pods" },
      h("thead", {}, h("tr", {}, ["col.pod", "col.node", "col.gpu", "col.shareMethod", "col.gpuShare", "col.gpuHours", "col.busy", "col.energy", "col.cost"]
        .map((k, i) => h("th", { scope: "col", class: i > 3 ? "num" : null }, t(k))))),
      h("tbody", {}, rows.map((r) => {
        const busy = fmt.divide(String(r.busy_gpu_seconds), String(r.gpu_seconds), 4);
        const share = r.gpu_share === undefined ? null : String(r.gpu_share);
        return h("tr", { "data-pod": r.group.pod ?? "", "data-gpu": r.group.gpu ?? "", "data-share": r.group.share ?? "" },
          h("th", { scope: "row", class: "mono" }, label(r.group.pod)),
          h("td", { class: "mono" }, label(r.group.node)),
          h("td", { class: "mono" }, r.group.gpu),
          shareCell(r.group.share),
          num(share ?? "", share === null ? "—" : fmt.percent(share), "gpu_share"),
          num(String(r.gpu_seconds), fmt.number(fmt.divide(String(r.gpu_seconds), "3600", 3), 3), "gpu_hours"),
          num(busy ?? "", busy === null ? "—" : fmt.percent(busy), "busy"),
          num(String(r.energy_wh), fmt.number(fmt.divide(String(r.energy_wh), "1000", 3), 3), "energy_kwh"),
          num(cost(r)?.amount ?? "", cost(r) ? fmt.money(cost(r).amount, cost(r).currency) : "—", "cost"));
      })),
      total === null ? null : h("tfoot", {}, h("tr", {},
        h("th", { scope: "row", colspan: "8" }, t("col.total")),
        num(total, fmt.money(total, currency), "cost"))))),
  ];
}

/** The deployments a tenant is charged on in the loaded allocation, its largest charge first.
 * @param {string} tenant @returns {string[]} */
export function tenantDeployments(tenant) {
  const a = state.alloc.data;
  if (!a) return [];
  /** @type {Map<string, string>} */
  const charged = new Map();
  for (const i of a.items) {
    if (i.tenant_id !== tenant || fmt.compare(i.allocated.amount, "0") <= 0) continue;
    charged.set(i.deployment_id, fmt.sum([charged.get(i.deployment_id) ?? "0", i.allocated.amount]));
  }
  return [...charged.keys()].sort((x, y) => fmt.compare(charged.get(y) ?? "0", charged.get(x) ?? "0") || x.localeCompare(y));
}

/** A party of the explanation, as people know it. @param {string} key */
function partyLabel(key) {
  if (key === "others") return t("explain.others");
  if (key === "idle") return t("explain.idle");
  return tenantLabel(key);
}

/** @param {Json} p @returns {string} */
function partyKey(p) {
  if (p.kind === "tenant") return p.tenant_id;
  return p.kind === "other_tenants" ? "others" : "idle";
}

/** The dialog for the state, into `#explain-root` (empty when closed). @param {HTMLElement} root */
export function renderExplain(root) {
  const e = state.explain;
  if (!e.open) {
    root.replaceChildren();
    return;
  }
  const d = e.data;
  const row = d?.rounding?.[0];
  // Whose view it is: the tenant clicked, or the tenant the page is read as (a tenant's key, or "View as"). Then
  // the title says what that tenant pays on the deployment (its rounding lines); else the deployment's cost.
  const viewer = e.tenant ?? state.viewAs ?? state.who?.tenant_id ?? null;
  const charged = row && viewer
    ? fmt.sum(row.lines.filter((/** @type {Json} */ l) => l.party.tenant_id === viewer).map((/** @type {Json} */ l) => l.amount))
    : null;
  const title = !row
    ? t("explain.titleShort", { deployment: e.deployment })
    : charged !== null
      ? t("explain.titleTenant", { tenant: tenantLabel(viewer), amount: fmt.money(charged, row.currency), deployment: e.deployment })
      : t("explain.title", { deployment: e.deployment, cost: fmt.money(row.cost, row.currency) });
  let body;
  if (e.status === "error") body = errorPanel(t("error.explain"), e.error, () => loadExplain(), "explain-error");
  else if (e.status !== "ok") body = loading(t("explain.loading"), "explain-loading");
  else body = explainBody(d, explainPods(e.pods, viewer));
  const picker = e.tenant ? tenantDeployments(e.tenant) : [];
  const focusedId = root.contains(document.activeElement) ? document.activeElement?.id : null;
  /** @param {Event} ev */
  const pick = (ev) => {
    update({ explain: { ...state.explain, deployment: /** @type {HTMLSelectElement} */ (ev.target).value } });
    loadExplain();
  };
  root.replaceChildren(h("div", { class: "drawer-layer", onkeydown: explainKeys },
    h("div", { class: "backdrop", onclick: closeExplain }),
    h("aside", { class: "drawer wide", role: "dialog", "aria-modal": "true", "aria-labelledby": "explain-title", id: "explain-dialog" },
      h("div", { class: "drawer-head" },
        h("h2", { id: "explain-title" }, title),
        h("button", { type: "button", class: "btn icon", id: "explain-close", "aria-label": t("form.close"), title: t("form.close"), onclick: closeExplain }, svgIcon(ICON_CLOSE))),
      h("p", { class: "muted", id: "explain-intro" }, viewer ? t("explain.forTenant", { tenant: tenantLabel(viewer) }) : t("explain.intro")),
      picker.length > 1 ? h("div", { class: "field" },
        h("label", { for: "explain-deployment" }, t("explain.pick")),
        h("select", { id: "explain-deployment", onchange: pick },
          picker.map((dep) => h("option", { value: dep, selected: dep === e.deployment }, dep)))) : null,
      h("div", { id: "explain-body", "aria-busy": e.status === "loading" ? "true" : "false" }, body))));
  // A re-render replaces what had the focus: keep it in the dialog (Escape and Tab work from there).
  if (!root.contains(document.activeElement)) {
    const keep = focusedId && document.getElementById(focusedId);
    (keep || $("#explain-close"))?.focus();
  }
}

/** @param {Json} d @param {HTMLElement[]} where */
function explainBody(d, where) {
  const parts = [];
  for (const p of d.policies) {
    parts.push(h("p", { class: "note", "data-policy": p.policy_id }, t("explain.policy", {
      policy: p.name, hourly: fmt.price(p.gpu_hourly_cost, p.currency), overhead: fmt.number(p.overhead_pct, 4),
      energy: fmt.price(p.energy_kwh_price, p.currency), pue: fmt.number(p.pue, 4),
    })));
  }
  /** @type {string[]} */
  const keys = [...new Set(d.buckets.flatMap((/** @type {Json} */ b) => b.priced.flatMap((/** @type {Json} */ p) => p.parties.map((/** @type {Json} */ x) => partyKey(x.party)))))];
  const color = (/** @type {string} */ k) => (k === "idle" ? "#6B6B6B" : k === "others" ? "#9C8A00" : PALETTE[Math.max(0, keys.indexOf(k)) % 6]);
  for (const r of d.rounding) parts.push(renderExplainChart(d.buckets, r.currency, partyLabel, color));
  parts.push(...where);
  for (const r of d.rounding) {
    const id = `explain-rounding-title-${r.currency}`;
    parts.push(h("h3", { id }, t("explain.rounding", { currency: r.currency })),
      h("p", { class: "note" }, t("explain.roundingNote", { exact: fmt.price(r.exact, r.currency), cost: fmt.money(r.cost, r.currency) })),
      tableWrap(id, h("table", { class: "data compact", id: "explain-rounding", "data-currency": r.currency },
        h("thead", {}, h("tr", {}, ["col.party", "col.policy", "col.exact", "col.scaled", "col.floor", "col.remainder", "col.amount"]
          .map((k, i) => h("th", { scope: "col", class: i > 1 ? "num" : null }, t(k))))),
        h("tbody", {}, r.lines.map((/** @type {Json} */ l) => h("tr", { "data-party": partyKey(l.party) },
          h("th", { scope: "row" }, partyLabel(partyKey(l.party))),
          h("td", { class: "mono" }, l.policy_id),
          num(l.exact, fmt.price(l.exact, r.currency), "exact"),
          num(l.scaled, fmt.price(l.scaled, r.currency), "scaled"),
          num(l.floor, fmt.money(l.floor, r.currency), "floor"),
          num(l.remainder_unit, fmt.money(l.remainder_unit, r.currency), "remainder_unit"),
          num(l.amount, fmt.money(l.amount, r.currency), "amount")))))));
  }
  // Hour by hour: each bucket's measure, claims and exact parts.
  const rows = [];
  for (const b of d.buckets) {
    for (const p of b.priced) {
      /** @type {Json[]} */
      const lines = b.owner ? [{ party: b.owner, cost: p.cost }] : p.parties;
      const span = String(lines.length + (b.owner ? 0 : 1));
      lines.forEach((x, i) => {
        const c = b.claims.find((/** @type {Json} */ cl) => partyKey(cl.party) === partyKey(x.party));
        rows.push(h("tr", { "data-start": b.start, "data-party": partyKey(x.party) },
          i === 0 ? h("th", { scope: "row", rowspan: span }, fmt.dateTime(b.start)) : null,
          i === 0 ? h("td", { class: "num", rowspan: span, "data-col": "gpu_seconds", "data-value": String(b.gpu_seconds) }, fmt.number(b.gpu_seconds, 3)) : null,
          h("td", {}, partyLabel(partyKey(x.party))),
          num(c ? String(c.tokens) : "", c ? fmt.number(c.tokens) : "—", "tokens"),
          num(c ? String(c.share) : "", c ? fmt.percent(c.share) : b.owner ? fmt.percent(1) : "—", "share"),
          num(x.cost, fmt.price(x.cost, p.currency), "part")));
      });
      if (!b.owner) {
        rows.push(h("tr", { "data-start": b.start, "data-party": "idle" },
          h("td", {}, t("explain.idle")), num("", "", "tokens"), num("", "", "share"), num(p.idle, fmt.price(p.idle, p.currency), "part")));
      }
    }
  }
  const label = t("explain.buckets", { n: fmt.number(d.buckets.length) });
  parts.push(h("details", { class: "chart-data", id: "explain-buckets" },
    h("summary", {}, label),
    h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": label },
      h("table", { class: "data compact" },
        h("thead", {}, h("tr", {}, ["col.hour", "col.gpuSeconds", "col.party", "col.tokens", "col.share", "col.part"]
          .map((k, i) => h("th", { scope: "col", class: [1, 3, 4, 5].includes(i) ? "num" : null }, t(k))))),
        h("tbody", {}, rows)))));
  return parts;
}

/** @param {KeyboardEvent} e */
function explainKeys(e) {
  dialogKeys(e, "#explain-dialog button, #explain-dialog select, #explain-dialog summary, #explain-dialog [tabindex='0']", closeExplain);
}
