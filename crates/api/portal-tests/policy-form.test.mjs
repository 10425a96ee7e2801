// The New allocation policy form's own checks (views/policy-form.js), before anything is sent: decimals typed
// with a comma or a point become the API's decimal text, never a float.

import { test } from "node:test";
import assert from "node:assert/strict";

globalThis.document = /** @type {any} */ ({ documentElement: {} });
const { decimalInput, validatePolicy } = await import("../assets/portal/views/policy-form.js");
const { FORM_DEFAULTS } = await import("../assets/portal/store.js");

test("a decimal as typed becomes the API's decimal text", () => {
  assert.equal(decimalInput("2,10"), "2.10");
  assert.equal(decimalInput(" 2.10 "), "2.10");
  assert.equal(decimalInput("+.5"), "0.5");
  assert.equal(decimalInput("-.5"), "-0.5");
  assert.equal(decimalInput("1."), "1");
  assert.equal(decimalInput("0.1000000000000000055511151231257827"), "0.1000000000000000055511151231257827");
  for (const bad of ["", "abc", "1,2,3", "1e3", "2 10", "."]) assert.equal(decimalInput(bad), null, bad);
});

test("a valid policy becomes the body sent, its figures as typed", () => {
  const { errors, body } = validatePolicy({
    ...FORM_DEFAULTS, name: " l40s-sd ", deployment_pattern: "", gpu_model: "L40S", currency: "EUR",
    gpu_hourly_cost: "0,90", overhead_pct: "10", pue: "1,3", energy_kwh_price: "0.18",
  });
  assert.deepEqual(errors, {});
  assert.deepEqual(body, {
    name: "l40s-sd", deployment_pattern: "*", gpu_model: "L40S", currency: "EUR", gpu_hourly_cost: "0.90",
    overhead_pct: "10", pue: "1.3", energy_kwh_price: "0.18", enabled: true,
  });
});

test("each bad field gets its message", () => {
  const { errors } = validatePolicy({
    ...FORM_DEFAULTS, name: "", currency: "eur", gpu_hourly_cost: "-0.90", overhead_pct: "x", pue: "0,9",
  });
  assert.deepEqual(errors, {
    name: { k: "v.name" },
    currency: { k: "v.currency" },
    gpu_hourly_cost: { k: "v.negative", p: { field: "form.hourly" } },
    overhead_pct: { k: "v.number", p: { field: "form.overhead", example: "18" } },
    pue: { k: "v.pue" },
  });
  assert.deepEqual(validatePolicy({ ...FORM_DEFAULTS, name: "a" }).errors, { gpu_hourly_cost: { k: "v.hourlyRequired" } });
});
