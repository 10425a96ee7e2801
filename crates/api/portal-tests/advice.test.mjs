// The "Savings, forecast, anomalies" section's helpers (views/advice.js), on answers shaped as
// contracts/v1/openapi.json's RecommendationList, Forecast and AnomalyList, read as the page reads them (api.js's
// readJson: quantities kept as their text). Every figure below is worked out by hand in its comment.

import { test } from "node:test";
import assert from "node:assert/strict";

globalThis.document = /** @type {any} */ ({ documentElement: {} });
const { setLang, missingKeys } = await import("../assets/portal/i18n.js");
const { readJson } = await import("../assets/portal/api.js");
const advice = await import("../assets/portal/views/advice.js");
const { money: fmtMoney } = await import("../assets/portal/format.js");

/** Runs `fn` with the portal in language `l`. */
function inLang(l, fn) {
  setLang(l, false);
  try {
    return fn();
  } finally {
    setLang("en", false);
  }
}

const TENANT_A = "0b6c5a3e-2f1d-4c8a-9e7b-1a2b3c4d5e6f";
const TENANT_B = "7d8e9f00-1122-4334-8556-778899aabbcc";

/** An evidence with what a kind does not use at zero. */
function evidence(over) {
  return {
    hours: 720, gpu_hours: 720, busy_gpu_hours: 0, utilization: 0, utilization_p50: 0, utilization_p95: 0,
    peak_busy_gpus: 0, memory_peak_gb: null, profile_memory_gb: null, idle_gpus: [], unpriced_gpu_hours: 0, ...over,
  };
}

// November 2026 (one calendar month: monthly savings = the period's).
const RECOMMENDATIONS = readJson(JSON.stringify({
  from: "2026-11-01T00:00:00Z",
  to: "2026-12-01T00:00:00Z",
  thresholds: { idle_utilization: "0.05", idle_share: "0.5", low_utilization: "0.3" },
  items: [
    {
      // 4 of 6 H100s idle 504 of their 720 hours each (70 %), at 2.10 EUR an hour:
      // cost 4 x 720 x 2.10 = 6048.00; savings = their idle hours, 4 x 504 x 2.10 = 4233.60.
      kind: "idle_gpus", deployment_id: "vllm-llama-70b", model: "NVIDIA H100 80GB HBM3", current_gpus: 6, gpus: 4,
      action: "remove_gpus", mig_profile: null, gpu_fraction: null,
      evidence: evidence({
        gpu_hours: 2880, busy_gpu_hours: 43.2, utilization: 0.015, utilization_p95: 0.04, peak_busy_gpus: 0.35,
        memory_peak_gb: 3.2,
        idle_gpus: ["a", "b", "c", "d"].map((x) => ({ gpu_uuid: `GPU-${x}`, hours: 720, idle_hours: 504 })),
      }),
      cost: { amount: "6048.00", currency: "EUR" }, savings: { amount: "4233.60", currency: "EUR" },
      monthly_savings: { amount: "4233.60", currency: "EUR" },
      message: "4 of 6 GPUs were idle 70% of their hours: remove them.",
    },
    {
      // Peak 1.6 busy GPUs -> 2 of 4 would hold it: cost 4 x 720 x 2.10 = 6048.00, half goes: 3024.00.
      kind: "low_utilization", deployment_id: "vllm-qwen-32b", model: "NVIDIA H100 80GB HBM3", current_gpus: 4, gpus: 2,
      action: "fewer_gpus", mig_profile: null, gpu_fraction: null,
      evidence: evidence({ gpu_hours: 2880, busy_gpu_hours: 633.6, utilization: 0.22, utilization_p50: 0.2,
        utilization_p95: 0.38, peak_busy_gpus: 1.6, memory_peak_gb: 61.5 }),
      cost: { amount: "6048.00", currency: "EUR" }, savings: { amount: "3024.00", currency: "EUR" },
      monthly_savings: { amount: "3024.00", currency: "EUR" },
      message: "2 GPUs would have held its busiest hour.",
    },
    {
      // 15 % busy on one A100 at 1.75 USD an hour: cost 720 x 1.75 = 1260.00; a 2g.20gb slice is 2/7 of it, so
      // 5/7 goes: 1260.00 x 5/7 = 900.00.
      kind: "low_utilization", deployment_id: "vllm-mistral-7b", model: "NVIDIA A100-SXM4-80GB", current_gpus: 1, gpus: 1,
      action: "mig_profile", mig_profile: "2g.20gb", gpu_fraction: "0.2857",
      evidence: evidence({ busy_gpu_hours: 108, utilization: 0.15, utilization_p50: 0.12, utilization_p95: 0.26,
        peak_busy_gpus: 0.27, memory_peak_gb: 14.5, profile_memory_gb: 20 }),
      cost: { amount: "1260.00", currency: "USD" }, savings: { amount: "900.00", currency: "USD" },
      monthly_savings: { amount: "900.00", currency: "USD" },
      message: "A MIG 2g.20gb slice would have held its load.",
    },
    {
      // 8 % busy on one L4 at 0.90 EUR an hour: cost 720 x 0.90 = 648.00; a 0.20 share keeps 0.20 of it:
      // 648.00 x 0.80 = 518.40.
      kind: "low_utilization", deployment_id: "embed-small", model: "NVIDIA L4", current_gpus: 1, gpus: 1,
      action: "share_gpu", mig_profile: null, gpu_fraction: "0.20",
      evidence: evidence({ busy_gpu_hours: 57.6, utilization: 0.08, utilization_p50: 0.07, utilization_p95: 0.17,
        peak_busy_gpus: 0.19 }),
      cost: { amount: "648.00", currency: "EUR" }, savings: { amount: "518.40", currency: "EUR" },
      monthly_savings: { amount: "518.40", currency: "EUR" },
      message: "A 0.20 share of a GPU would have held its load.",
    },
    {
      // 2 L40S a whole month with no policy: 2 x 720 = 1440 unpriced GPU-hours, no cost, no savings.
      kind: "unpriced", deployment_id: "vllm-gemma-9b", model: "NVIDIA L40S", current_gpus: 2, gpus: 2,
      action: "add_policy", mig_profile: null, gpu_fraction: null,
      evidence: evidence({ gpu_hours: 1440, unpriced_gpu_hours: 1440 }),
      cost: null, savings: null, monthly_savings: null,
      message: "No policy prices its GPU time: add one.",
    },
  ],
}));

// November 2026 on the 21st: 20 days counted, 10 left.
const FORECAST = readJson(JSON.stringify({
  period: "2026-11",
  from: "2026-11-01T00:00:00Z",
  to: "2026-12-01T00:00:00Z",
  as_of: "2026-11-21T00:00:00Z",
  history_from: "2026-10-04T00:00:00Z",
  days_left: 10,
  lines: [
    { tenant_id: TENANT_A, deployment_id: "vllm-llama-70b", spent: eur("1400.00"), expected: eur("2100.00"), low: eur("1950.00"), high: eur("2300.00") },
    { tenant_id: TENANT_A, deployment_id: "embed-small", spent: eur("100.00"), expected: eur("150.00"), low: eur("140.00"), high: eur("160.00") },
    { tenant_id: TENANT_B, deployment_id: "vllm-llama-70b", spent: eur("600.00"), expected: eur("900.00"), low: eur("800.00"), high: eur("1000.00") },
  ],
  // A's lines summed: 1400 + 100 = 1500, 2100 + 150 = 2250, 1950 + 140 = 2090, 2300 + 160 = 2460.
  tenants: [
    { tenant_id: TENANT_A, spent: eur("1500.00"), expected: eur("2250.00"), low: eur("2090.00"), high: eur("2460.00") },
    { tenant_id: TENANT_B, spent: eur("600.00"), expected: eur("900.00"), low: eur("800.00"), high: eur("1000.00") },
  ],
  budgets: [
    {
      // 1500 spent, 75 a day expected (750 over 10 days), 96 at the high (960 over 10): the 2000 limit is passed
      // after 7 days left (1500 + 7 x 75 = 2025), on Nov 27, and after 6 at the high (1500 + 6 x 96 = 2076), Nov 26.
      budget_id: "bud_7", tenant_id: TENANT_A, name: "Acme GPU", limit: eur("2000.00"), spent: eur("1500.00"),
      expected: eur("2250.00"), exhausted_on: "2026-11-27", exhausted_on_high: "2026-11-26",
    },
    {
      budget_id: "bud_8", tenant_id: TENANT_B, name: "Beta GPU", limit: eur("1500.00"), spent: eur("600.00"),
      expected: eur("900.00"), exhausted_on: null, exhausted_on_high: null,
    },
  ],
}));

/** @param {string} amount */
function eur(amount) {
  return { amount, currency: "EUR" };
}

const ANOMALIES = readJson(JSON.stringify({
  from: "2026-11-01T00:00:00Z",
  to: "2026-12-01T00:00:00Z",
  items: [
    {
      // |48.30 - 12.60| / (1.4826 x 0.40) = 35.70 / 0.59304 = 60.198... -> 60.20.
      id: "anm_3", deployment_id: "vllm-llama-70b", hour: "2026-11-14T03:00:00Z", metric: "cost", currency: "EUR",
      value: "48.30", baseline_median: "12.60", baseline_mad: "0.40", deviation_mads: "60.20", direction: "above",
      baseline_hours: 672, detected_at: "2026-11-14T05:00:00Z", message: "Cost 48.30 EUR, 60.20 MADs above the median 12.60.",
    },
  ],
}));

test("the answer's quantities are read as their exact text", () => {
  const [idle, , mig] = RECOMMENDATIONS.items;
  assert.equal(idle.evidence.utilization, "0.015");
  assert.equal(idle.evidence.peak_busy_gpus, "0.35");
  assert.equal(mig.evidence.memory_peak_gb, "14.5");
  assert.equal(mig.evidence.profile_memory_gb, "20");
  assert.equal(idle.evidence.idle_gpus[0].idle_hours, 504); // a count stays a number
});

test("each recommendation says what to do in a few words", () => {
  const phrases = RECOMMENDATIONS.items.map(advice.actionPhrase);
  assert.deepEqual(phrases, ["Remove 4 of 6 GPUs", "2 GPUs instead of 4", "MIG 2g.20gb", "A 0.20 share of a GPU", "Add a policy"]);
  assert.deepEqual(RECOMMENDATIONS.items.map((x) => advice.kindLabel(x.kind)),
    ["Idle GPUs", "Oversized", "Oversized", "Oversized", "Unpriced"]);
  // One GPU, or several slices, are said so.
  const [idle, fewer, mig, share] = RECOMMENDATIONS.items;
  assert.equal(advice.actionPhrase({ ...fewer, gpus: 1 }), "1 GPU instead of 4");
  assert.equal(advice.actionPhrase({ ...idle, gpus: 1, current_gpus: 1 }), "Remove 1 of 1 GPU");
  assert.equal(advice.actionPhrase({ ...mig, gpus: 2 }), "2 × MIG 2g.20gb");
  assert.equal(advice.actionPhrase({ ...share, gpus: 2 }), "2 GPUs, a 0.20 share of each");
  inLang("fr", () => {
    assert.deepEqual(RECOMMENDATIONS.items.map(advice.actionPhrase),
      ["Retirer 4 GPU sur 6", "2 GPU au lieu de 4", "MIG 2g.20gb", "Une part de 0,20 d'un GPU", "Ajouter une politique"]);
  });
});

test("the evidence in short: utilization, idle hours, p95, the peak and the memory", () => {
  const [idle, fewer, mig, share, unpriced] = RECOMMENDATIONS.items.map(advice.evidenceParts);
  // 4 idle GPUs: 4 x 504 = 2016 idle of 4 x 720 = 2880 GPU-hours.
  assert.deepEqual(idle, ["utilization 1.5%", "idle 2,016 of 2,880 GPU-hours"]);
  assert.deepEqual(fewer, ["utilization 22%", "p95 38%", "peak 1.6 busy GPUs", "memory peak 61.5 GB"]);
  assert.deepEqual(mig, ["utilization 15%", "p95 26%", "peak 0.27 busy GPUs", "memory peak 14.5 GB of 20 GB"]);
  assert.deepEqual(share, ["utilization 8%", "p95 17%", "peak 0.19 busy GPUs"]);
  assert.deepEqual(unpriced, ["1,440 unpriced GPU-hours", "over 720 hours"]);
  inLang("fr", () => {
    assert.deepEqual(advice.evidenceParts(RECOMMENDATIONS.items[0]), ["utilisation 1,5\u00a0%", "inactif 2\u202f016 sur 2\u202f880 heures GPU"]);
  });
});

test("monthly savings are summed exactly per currency, the unpriced left out", () => {
  // EUR: 4233.60 + 3024.00 + 518.40 = 7776.00; USD: 900.00.
  const totals = advice.savingsTotals(RECOMMENDATIONS.items);
  assert.deepEqual(totals, [{ currency: "EUR", amount: "7776.00" }, { currency: "USD", amount: "900.00" }]);
  assert.deepEqual(totals.map((x) => fmtMoney(x.amount, x.currency)), ["€7,776.00", "$900.00"]);
  inLang("fr", () => assert.deepEqual(totals.map((x) => fmtMoney(x.amount, x.currency)), ["7\u202f776,00\u00a0€", "900,00\u00a0$US"]));
  // Where floats drift, the sum does not: 0.10 + 0.20 is 0.30, never 0.30000000000000004.
  const cents = ["0.10", "0.20"].map((amount) => ({ monthly_savings: { amount, currency: "EUR" } }));
  assert.deepEqual(advice.savingsTotals(cents), [{ currency: "EUR", amount: "0.30" }]);
  assert.deepEqual(advice.savingsTotals([RECOMMENDATIONS.items[4]]), []);
});

test("the forecast is of the month of the period's end, else this month", () => {
  assert.equal(advice.forecastMonth("2026-11-20"), "2026-11");
  assert.equal(advice.forecastMonth("", new Date("2026-12-05T10:00:00Z")), "2026-12");
  assert.equal(advice.forecastMonth(null, new Date("2026-12-05T10:00:00Z")), "2026-12");
});

test("a tenant's band: its figures as exact shares of the currency's widest high", () => {
  const scales = advice.bandScales(FORECAST.tenants);
  assert.deepEqual([...scales], [["EUR", "2460.00"]]);
  const [a, b] = FORECAST.tenants.map((x) => advice.bandFigures(x, scales.get("EUR")));
  // A: 1500 / 2460 = 0.60975.. -> 0.6098; 2090 / 2460 = 0.84959.. -> 0.8496; 2250 / 2460 = 0.91463.. -> 0.9146;
  // 2460 / 2460 = 1; the band 1.0000 - 0.8496 = 0.1504.
  assert.deepEqual(a, { spent: "0.6098", low: "0.8496", expected: "0.9146", high: "1.0000", width: "0.1504" });
  // B: 600 / 2460 = 0.24390.. -> 0.2439; 800 / 2460 = 0.32520.. -> 0.3252; 900 / 2460 = 0.36585.. -> 0.3659;
  // 1000 / 2460 = 0.40650.. -> 0.4065; the band 0.4065 - 0.3252 = 0.0813.
  assert.deepEqual(b, { spent: "0.2439", low: "0.3252", expected: "0.3659", high: "0.4065", width: "0.0813" });
  assert.equal(advice.bandText(FORECAST.tenants[0]), "spent €1,500.00, expected €2,250.00, between €2,090.00 and €2,460.00");
  inLang("fr", () => assert.equal(advice.bandText(FORECAST.tenants[1]),
    "dépensé 600,00\u00a0€, attendu 900,00\u00a0€, entre 800,00\u00a0€ et 1\u202f000,00\u00a0€"));
  // Nothing spent nor expected: an empty bar, not a division by zero.
  const zero = { tenant_id: null, spent: eur("0.00"), expected: eur("0.00"), low: eur("0.00"), high: eur("0.00") };
  assert.deepEqual(advice.bandFigures(zero, "0.00"), { spent: "0.0000", low: "0.0000", expected: "0.0000", high: "0.0000", width: "0.0000" });
});

test("the forecast's lead: the month, the last day counted, the days left", () => {
  // as_of is Nov 21's midnight: Nov 1 to Nov 20 counted, Nov 21 to Nov 30 left (10 days).
  assert.equal(advice.forecastLead(FORECAST), "November 2026: spend counted through Nov 20, 2026, 10 days left.");
  inLang("fr", () => assert.equal(advice.forecastLead(FORECAST),
    "novembre 2026 : dépenses comptées jusqu'au 20 nov. 2026 inclus, 10 jours restants."));
  assert.equal(advice.forecastLead({ ...FORECAST, as_of: FORECAST.from, days_left: 30 }), "November 2026: no day counted yet, 30 days left.");
  assert.equal(advice.forecastLead({ ...FORECAST, as_of: FORECAST.to, days_left: 0 }), "November 2026: the month is over, its figures are final.");
});

test("a budget says the day it is expected to run out, highlighted inside the month", () => {
  const [acme, beta] = FORECAST.budgets.map((b) => advice.budgetOutlook(b, FORECAST));
  assert.deepEqual(acme, { text: "Expected to exceed on Nov 27", earliest: "at the earliest on Nov 26", inside: true });
  assert.deepEqual(beta, { text: "Expected within its limit", earliest: null, inside: false });
  inLang("fr", () => assert.deepEqual(advice.budgetOutlook(FORECAST.budgets[0], FORECAST),
    { text: "Dépassement prévu le 27 nov.", earliest: "au plus tôt le 26 nov.", inside: true }));
  // Only the band's high passes the limit: said, not highlighted.
  assert.deepEqual(advice.budgetOutlook({ ...FORECAST.budgets[1], exhausted_on_high: "2026-11-30" }, FORECAST),
    { text: "May exceed on Nov 30 at the range's high", earliest: null, inside: false });
  // Spent past the limit already.
  assert.deepEqual(advice.budgetOutlook({ ...FORECAST.budgets[0], spent: eur("2000.00"), exhausted_on: "2026-11-20" }, FORECAST),
    { text: "Limit already reached", earliest: null, inside: true });
});

test("an anomaly: its value against the baseline's median, how far and which way", () => {
  const [x] = advice.newestFirst(ANOMALIES.items);
  assert.deepEqual(advice.anomalyFigures(x), {
    metric: "Cost (EUR)", value: "€48.30", median: "€12.60", deviation: "60.2 × MAD", direction: "Above",
  });
  // GPU time in GPU-hours, exactly: 9000 s / 3600 = 2.5; 1800 s = 0.5. A steady baseline has no deviation.
  const time = { ...x, metric: "gpu_seconds", currency: null, value: "9000", baseline_median: "1800", baseline_mad: "0",
    deviation_mads: null, direction: "above" };
  assert.deepEqual(advice.anomalyFigures(time), {
    metric: "GPU time", value: "2.5 GPU-h", median: "0.5 GPU-h", deviation: "steady baseline", direction: "Above",
  });
  inLang("fr", () => assert.equal(advice.anomalyFigures({ ...time, direction: "below" }).direction, "En dessous"));
  // Newest hour first, whatever the order received.
  const later = { ...x, id: "anm_4", hour: "2026-11-20T09:00:00Z" };
  assert.deepEqual(advice.newestFirst([x, later]).map((a) => a.id), ["anm_4", "anm_3"]);
});

test("every message is in English and in French", () => {
  assert.deepEqual(missingKeys(), []);
});
