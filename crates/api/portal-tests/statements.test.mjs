// The statements' helpers (views/statements.js, views/statement.js), on answers shaped as
// contracts/v1/openapi.json's StatementList and Statement, read as the page reads them (api.js's readJson). The
// page never sums money: every amount below is the API's, shown in the language's format. The browser page and
// its printed PDF are checked by crates/api/tests/http/portal.rs.

import { test } from "node:test";
import assert from "node:assert/strict";

globalThis.document = /** @type {any} */ ({ documentElement: {} });
const { setLang } = await import("../assets/portal/i18n.js");
const { readJson } = await import("../assets/portal/api.js");
const list = await import("../assets/portal/views/statements.js");
const one = await import("../assets/portal/views/statement.js");

/** Runs `fn` with the portal in language `l`. */
function inLang(l, fn) {
  setLang(l, false);
  try {
    return fn();
  } finally {
    setLang("en", false);
  }
}

const ACME = "8f0c2a4e-1b7d-4c55-9a51-2f3e6d7c9b10";
const NIL = "00000000-0000-0000-0000-000000000000";

/** @param {string} amount */
function eur(amount) {
  return { amount, currency: "EUR" };
}

// Acme's October 2026: acme-finetune 10 A100-hours (1.60 x 10 x 1.15 = 18.40, 4 kWh x 1.4 x 0.21 = 1.176:
// 19.576 -> 19.58) and acme-embed 4 H100-hours (2.10 x 4 x 1.18 = 9.912, 1.6 kWh x 1.4 x 0.21 = 0.4704:
// 10.3824 -> 10.38): 29.96 in all. A sample after issue added 5 minutes to acme-finetune: 19.74 now, +0.16.
const STATEMENT = readJson(JSON.stringify({
  number: "ST-2026-10-0001",
  tenant_id: ACME,
  tenant_name: "Acme Corp",
  period: "2026-10",
  from: "2026-10-01T00:00:00Z",
  to: "2026-11-01T00:00:00Z",
  issued_at: "2026-11-02T09:30:00Z",
  issued_by: "key_3",
  lines: [
    { kind: "charge", deployment_id: "acme-finetune", policy_id: "alp_2", gpu_hours: "10.000000", energy_kwh: "4.000000", amount: eur("19.58") },
    { kind: "charge", deployment_id: "acme-embed", policy_id: "alp_1", gpu_hours: "4.000000", energy_kwh: "1.600000", amount: eur("10.38") },
  ],
  totals: [eur("29.96")],
  adjustments: [
    { kind: "adjustment", deployment_id: "acme-finetune", policy_id: "alp_2", gpu_hours: "0.083333", energy_kwh: "0.033333", amount: eur("0.16") },
  ],
  adjusted_totals: [eur("30.12")],
  as_of: "2026-11-20T08:00:00Z",
}));

test("the last month that is over is the one before now's, across a year", () => {
  assert.equal(list.lastMonth(new Date("2026-12-05T10:00:00Z")), "2026-11");
  assert.equal(list.lastMonth(new Date("2027-01-01T00:00:00Z")), "2026-12");
  assert.equal(list.lastMonth(new Date("2026-03-31T23:59:59Z")), "2026-02");
});

test("statements are listed newest period first, then by number", () => {
  const items = [
    { number: "ST-2026-09-0002", period: "2026-09" },
    { number: "ST-2026-10-0004", period: "2026-10" },
    { number: "ST-2026-09-0001", period: "2026-09" },
    { number: "ST-2026-10-0003", period: "2026-10" },
  ];
  assert.deepEqual(list.newestFirst(items).map((x) => x.number),
    ["ST-2026-10-0003", "ST-2026-10-0004", "ST-2026-09-0001", "ST-2026-09-0002"]);
});

test("a statement's tenant: its name as issued, else its id; the nil uuid is the platform's", () => {
  assert.equal(list.statementTenant(STATEMENT), "Acme Corp");
  assert.equal(list.statementTenant({ tenant_id: ACME, tenant_name: null }), ACME);
  assert.equal(list.statementTenant({ tenant_id: NIL, tenant_name: null }), "Unallocated capacity (the platform's own)");
  inLang("fr", () => assert.equal(list.statementTenant({ tenant_id: NIL, tenant_name: null }), "Capacité non allouée (celle de la plateforme)"));
});

test("the address opens a statement by its number, anything else the page", () => {
  assert.equal(list.statementHref("ST-2026-10-0001"), "#statement/ST-2026-10-0001");
  assert.deepEqual(one.routeOf("#statement/ST-2026-10-0001"), { statement: "ST-2026-10-0001" });
  assert.deepEqual(one.routeOf(list.statementHref("ST 1/2")), { statement: "ST 1/2" });
  for (const hash of ["", "#", "#statements", "#statement/", "#main"]) assert.deepEqual(one.routeOf(hash), { statement: null }, hash);
});

test("the printed statement: its header, its lines and total as the API gives them", () => {
  const m = one.statementModel(STATEMENT, new Map([["alp_2", "a100-training"]]));
  assert.equal(m.issuer, "eai-gpu");
  assert.equal(m.title, "Statement ST-2026-10-0001");
  assert.equal(m.tenant, "Acme Corp");
  assert.equal(m.tenantId, ACME);
  assert.equal(m.period, "October 2026");
  // `to` is the next month's midnight: the last day printed is Oct 31.
  assert.equal(m.range, "Oct 1, 2026 to Oct 31, 2026 (UTC)");
  assert.equal(m.issued, "Nov 2, 2026, 9:30 AM UTC by key_3");
  assert.deepEqual(m.lines.map((l) => [l.kind, l.deployment, l.policy, l.gpuHours.shown, l.energy.shown, l.amount.value, l.amount.shown]), [
    ["charge", "acme-finetune", "a100-training", "10", "4", "19.58", "€19.58"],
    // A policy whose name is not known shows its id.
    ["charge", "acme-embed", "alp_1", "4", "1.6", "10.38", "€10.38"],
  ]);
  assert.deepEqual(m.totals, [{ label: "Total EUR", value: "29.96", currency: "EUR", shown: "€29.96" }]);
});

test("adjustments print with their sign and the adjusted totals, only when there are some", () => {
  const m = one.statementModel(STATEMENT);
  assert.equal(m.adjustments?.title, "Adjustments since issue (as of Nov 20, 2026, 8:00 AM UTC)");
  assert.deepEqual(m.adjustments?.lines.map((l) => [l.gpuHours.shown, l.energy.shown, l.amount.shown]), [["+0.083333", "+0.033333", "+€0.16"]]);
  assert.deepEqual(m.adjustments?.totals.map((x) => [x.label, x.value, x.shown]), [["Adjusted total EUR", "30.12", "€30.12"]]);
  // A late sample can lower a month too: the minus sign is the format's.
  const lower = one.statementModel({ ...STATEMENT, adjustments: [{ ...STATEMENT.adjustments[0], gpu_hours: "-0.083333", amount: eur("-0.16") }] });
  assert.deepEqual(lower.adjustments?.lines.map((l) => [l.gpuHours.shown, l.amount.shown]), [["-0.083333", "-€0.16"]]);
  // No adjustment: no such part at all.
  assert.equal(one.statementModel({ ...STATEMENT, adjustments: [], adjusted_totals: STATEMENT.totals }).adjustments, null);
});

test("the statement in French", () => {
  inLang("fr", () => {
    const m = one.statementModel(STATEMENT);
    assert.equal(m.title, "Relevé ST-2026-10-0001");
    assert.equal(m.period, "octobre 2026");
    assert.equal(m.range, "du 1 oct. 2026 au 31 oct. 2026 (UTC)");
    assert.deepEqual(m.lines.map((l) => [l.energy.shown, l.amount.shown]), [["4", "19,58\u00a0€"], ["1,6", "10,38\u00a0€"]]);
    assert.deepEqual(m.totals.map((x) => [x.label, x.shown]), [["Total EUR", "29,96\u00a0€"]]);
    assert.equal(m.adjustments?.title, "Ajustements depuis l'émission (au 20 nov. 2026, 08:00 UTC)");
  });
});

test("amounts are shown as given, never through a float", () => {
  // 0.1 + 0.2 in a float is 0.30000000000000004; the API's totals are printed as their text says.
  const m = one.statementModel({ ...STATEMENT, totals: [eur("123456789012345.67")], adjustments: [] });
  assert.equal(m.totals[0].shown, "€123,456,789,012,345.67");
  assert.equal(m.totals[0].value, "123456789012345.67");
});
