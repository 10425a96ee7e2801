// @ts-check
// The portal's one state object and its one way to change: `update(patch)` replaces top-level parts of the state
// (never mutate a part in place: a part is new whenever it changes) and then renders (app.js registers the
// renderer, which redraws exactly the regions whose parts changed).

import * as fmt from "./format.js";

/** Roles for which the FinOps section opens (the portal guide's Roles table). */
export const READERS = new Set(["platform_admin", "finops", "tenant_admin", "auditor"]);
/** Roles that create allocation policies. */
export const POLICY_ADMINS = new Set(["platform_admin"]);
/** Roles that issue a month's statements. */
export const STATEMENT_ISSUERS = new Set(["platform_admin"]);

/** @typedef {{ name: string, deployment_pattern: string, gpu_model: string, currency: string, gpu_hourly_cost: string,
 *   overhead_pct: string, pue: string, energy_kwh_price: string, effective_from: string, enabled: boolean }} FormValues */

/** @type {Readonly<FormValues>} */
export const FORM_DEFAULTS = {
  name: "",
  deployment_pattern: "*",
  gpu_model: "",
  currency: "USD",
  gpu_hourly_cost: "",
  overhead_pct: "0",
  pue: "",
  energy_kwh_price: "",
  effective_from: "",
  enabled: true,
};

/** A field's error: one of ours (`k` a message key, `p` its parameters) or the service's reasons. */
/** @typedef {{ k?: string, p?: Record<string, string>, server?: string[] }} FieldError */

/** The API's answers are read as they come (their shapes are contracts/v1/openapi.json's). */
/** @typedef {any} Json */

/** @typedef {"idle" | "loading" | "ok" | "error"} Status */

/**
 * @typedef {Object} State
 * @property {string | null} key this tab's API key
 * @property {Json | null} who GET /v1/auth/whoami for the key
 * @property {{ status: "idle" | "loading" | "error", error: any }} boot a reload with a key in this tab
 * @property {{ busy: boolean, error: any }} signin the sign-in form (`error`: an ApiFailure or a message key)
 * @property {{ from: string, to: string, error: string | null }} period the period asked (UTC days, `to` inclusive)
 * @property {{ status: Status, data: Json | null, error: any, seq: number }} alloc the period's allocation
 * @property {{ status: "idle" | "loading" | "ok" | "failed", deployments: Map<string, Json>, tenants: Map<string, Json> }} tokens
 *   cost per 1M tokens of the period (GET /v1/finops/gpu/token-costs), per deployment and per tenant, keyed
 *   `id\u0000currency`; empty until loaded (or when the call fails: the column then shows a dash)
 * @property {{ mode: "cost" | "rate", series: Json | null, status: Status, error: any }} chart the chart: daily cost,
 *   or cost per 1M tokens per day (from the allocation series)
 * @property {Map<string, Json>} tenants registered tenants the key may see (GET /v1/tenants), by id
 * @property {Set<string>} seenTenants tenant ids seen in allocations, registered or not: what a platform_admin may view as
 * @property {string | null} viewAs the tenant a platform_admin views the page as (sent as X-EAI-Tenant)
 * @property {{ status: Status, items: Json[], error: any, seq: number }} policies the allocation policies
 * @property {{ items: Json[], seq: number }} budgets budgets in force or scheduled (the section shows only when some)
 * @property {{ open: boolean, values: FormValues, errors: Record<string, FieldError>, failure: any, busy: boolean,
 *   opener: string | null }} form the New allocation policy form
 * @property {{ open: boolean, deployment: string | null, tenant: string | null, status: Status, data: Json | null,
 *   error: any, opener: string | null, seq: number, pods: { data?: Json, error?: any } | null }} explain why a
 *   deployment costs what it does (GET /v1/finops/gpu/allocation/explain), for one deployment or for one tenant's
 *   charge (`tenant`, with the deployments it is charged on to pick from)
 * @property {Answer} recommendations what to do about idle and oversized GPUs in the period, with the savings
 *   (GET /v1/finops/gpu/recommendations)
 * @property {Answer} forecast the expected spend of the month of the period's end, and when budgets run out
 *   (GET /v1/finops/gpu/forecast)
 * @property {Answer} anomalies the hours of the period far from their deployment's baseline (GET /v1/finops/gpu/anomalies)
 * @property {Answer} statements the issued statements the key may see, newest period first (GET /v1/finops/gpu/statements)
 * @property {{ busy: boolean, period: string | null, data: Json | null, error: any }} issue what the last "Issue
 *   statements" did (POST /v1/finops/gpu/statements): issued and already issued, or its failure
 * @property {{ statement: string | null }} route what the address's hash opens: the page, or a statement by number
 *   (`#statement/ST-2026-10-0001`)
 * @property {Answer & { number: string | null }} statement the statement the route opens (GET
 *   /v1/finops/gpu/statements/{number})
 */

/** One answer of the API as a section shows it: not asked yet, loading, its data, or its failure. */
/** @typedef {{ status: Status, data: Json | null, error: any, seq: number }} Answer */

/** @type {State} */
export const state = {
  key: null,
  who: null,
  boot: { status: "idle", error: null },
  signin: { busy: false, error: null },
  period: { from: fmt.utcDay(-30), to: fmt.utcDay(0), error: null },
  alloc: { status: "idle", data: null, error: null, seq: 0 },
  tokens: { status: "idle", deployments: new Map(), tenants: new Map() },
  chart: { mode: "cost", series: null, status: "idle", error: null },
  tenants: new Map(),
  seenTenants: new Set(),
  viewAs: null,
  policies: { status: "idle", items: [], error: null, seq: 0 },
  budgets: { items: [], seq: 0 },
  form: { open: false, values: { ...FORM_DEFAULTS }, errors: {}, failure: null, busy: false, opener: null },
  explain: { open: false, deployment: null, tenant: null, status: "idle", data: null, error: null, opener: null, seq: 0, pods: null },
  recommendations: { status: "idle", data: null, error: null, seq: 0 },
  forecast: { status: "idle", data: null, error: null, seq: 0 },
  anomalies: { status: "idle", data: null, error: null, seq: 0 },
  statements: { status: "idle", data: null, error: null, seq: 0 },
  issue: { busy: false, period: null, data: null, error: null },
  route: { statement: null },
  statement: { status: "idle", data: null, error: null, seq: 0, number: null },
};

/** @type {() => void} */
let renderer = () => {};

/** Sets what `update` calls after each change (app.js: the page's render). @param {() => void} render */
export function onUpdate(render) {
  renderer = render;
}

/** Replaces the given parts of the state, then renders what changed. @param {Partial<State>} patch */
export function update(patch) {
  Object.assign(state, patch);
  renderer();
}
