// format.js as the portal uses it (node --test, no dependency; scripts/portal-check.sh runs it): exact decimal
// sums and divisions on BigInts, rounding half away from zero, money and numbers as each language shows them.
// The browser page is checked for the same figures by crates/api/tests/http/portal.rs.

import { test } from "node:test";
import assert from "node:assert/strict";

// i18n.js sets the page's `lang` attribute: the one piece of the DOM it touches.
globalThis.document = /** @type {any} */ ({ documentElement: {} });
const { setLang } = await import("../assets/portal/i18n.js");
const fmt = await import("../assets/portal/format.js");

/** Runs `fn` with the portal in language `l`. */
function inLang(l, fn) {
  setLang(l, false);
  try {
    return fn();
  } finally {
    setLang("en", false);
  }
}

test("a decimal string parses to units and a scale, anything else to null", () => {
  assert.deepEqual(fmt.parseDecimal("12.340"), { units: 12340n, scale: 3 });
  assert.deepEqual(fmt.parseDecimal(" -0.5 "), { units: -5n, scale: 1 });
  assert.deepEqual(fmt.parseDecimal(".5"), { units: 5n, scale: 1 });
  assert.deepEqual(fmt.parseDecimal("+7"), { units: 7n, scale: 0 });
  for (const bad of ["", "-", ".", "abc", "1e5", "1,5", "1.2.3", null, undefined]) {
    assert.equal(fmt.parseDecimal(bad), null, String(bad));
  }
});

test("sums are exact where floats drift, and keep the widest scale", () => {
  assert.equal(0.1 + 0.2, 0.30000000000000004); // what the page must never show
  assert.equal(fmt.sum(["0.1", "0.2"]), "0.3");
  assert.equal(fmt.sum(["1.005", "-2", null, "not a number"]), "-0.995");
  assert.equal(fmt.sum(["10.50", "0.5"]), "11.00");
  assert.equal(fmt.sum(["-0.25", "0.05"]), "-0.20");
  assert.equal(fmt.sum([]), "0");
  // A thousand cents are ten euros exactly.
  assert.equal(fmt.sum(Array(1000).fill("0.01")), "10.00");
});

test("sums beyond 2^53 stay exact", () => {
  assert.equal(2 ** 53 + 1, 2 ** 53); // a float cannot hold it
  assert.equal(fmt.sum(["9007199254740992", "1"]), "9007199254740993");
  assert.equal(fmt.sum(["12345678901234567890.12", "0.01", "-0.13"]), "12345678901234567890.00");
});

test("division rounds half away from zero at the places asked", () => {
  assert.equal(fmt.divide("1", "8", 2), "0.13"); // 0.125
  assert.equal(fmt.divide("-1", "8", 2), "-0.13"); // -0.125
  assert.equal(fmt.divide("1", "-8", 2), "-0.13");
  assert.equal(fmt.divide("-1", "-8", 2), "0.13");
  assert.equal(fmt.divide("2.675", "1", 2), "2.68"); // (2.675).toFixed(2) is "2.67"
  assert.equal(fmt.divide("-2.675", "1", 2), "-2.68");
  assert.equal(fmt.divide("0.124999", "1", 2), "0.12");
  assert.equal(fmt.divide("1", "3"), "0.333333"); // six places by default
  assert.equal(fmt.divide("2", "3", 0), "1");
  assert.equal(fmt.divide("-0.001", "1", 2), "0.00"); // no negative zero
  assert.equal(fmt.divide("7200", "3600", 3), "2.000");
  assert.equal(fmt.divide("18014398509481985", "2", 1), "9007199254740992.5");
  assert.equal(fmt.divide("1", "0"), null);
  assert.equal(fmt.divide("1", "0.000"), null);
  assert.equal(fmt.divide("x", "1"), null);
});

test("compare orders decimals exactly, beyond 2^53 too", () => {
  assert.equal(fmt.compare("0.10", "0.1"), 0);
  assert.equal(fmt.compare("-1", "0"), -1);
  assert.equal(fmt.compare("2.001", "2.0009"), 1);
  assert.equal(fmt.compare("9007199254740993", "9007199254740992"), 1); // equal as floats
  assert.equal(fmt.compare("not a number", "0"), 0);
});

test("money in English: the currency's digits, rounded half away from zero", () => {
  assert.equal(fmt.money("1234.5", "EUR"), "€1,234.50");
  assert.equal(fmt.money("0.125", "EUR"), "€0.13");
  assert.equal(fmt.money("-0.125", "EUR"), "-€0.13");
  assert.equal(fmt.money("2.675", "EUR"), "€2.68");
  assert.equal(fmt.money("1.005", "USD"), "$1.01"); // (1.005).toFixed(2) is "1.00"
  assert.equal(fmt.money("0.004", "EUR"), "€0.00");
  assert.equal(fmt.money("1234.5", "JPY"), "¥1,235");
  assert.equal(fmt.money("12345678901234567.89", "EUR"), "€12,345,678,901,234,567.89");
  assert.equal(fmt.money(null, "EUR"), "—");
  assert.equal(fmt.money("1", null), "—");
  assert.equal(fmt.money("1.5", "NOT A CURRENCY"), "1.5 NOT A CURRENCY");
});

test("money in French: spaces for thousands, a comma, the symbol after", () => {
  inLang("fr", () => {
    assert.equal(fmt.money("1234.5", "EUR"), "1\u202f234,50\u00a0€");
    assert.equal(fmt.money("-0.125", "EUR"), "-0,13\u00a0€");
    assert.equal(fmt.money("2.675", "EUR"), "2,68\u00a0€");
    assert.equal(fmt.money("12345678901234567.89", "EUR"), "12\u202f345\u202f678\u202f901\u202f234\u202f567,89\u00a0€");
  });
});

test("a unit price keeps every given digit, at least the currency's", () => {
  assert.equal(fmt.price("2.105", "EUR"), "€2.105");
  assert.equal(fmt.price("2", "EUR"), "€2.00");
  assert.equal(fmt.price("0.0000001234", "USD"), "$0.0000001234");
  assert.equal(fmt.currencyDigits("EUR"), 2);
  assert.equal(fmt.currencyDigits("JPY"), 0);
  inLang("fr", () => assert.equal(fmt.price("2.105", "EUR"), "2,105\u00a0€"));
});

test("quantities and shares, per language", () => {
  assert.equal(fmt.number("1234.5678", 2), "1,234.57");
  assert.equal(fmt.number("1234.565", 2), "1,234.57");
  assert.equal(fmt.number("-1234.565", 2), "-1,234.57");
  assert.equal(fmt.number("96.5", 0), "97");
  assert.equal(fmt.number(42), "42");
  assert.equal(fmt.number("9007199254740993"), "9,007,199,254,740,993");
  assert.equal(fmt.number(""), "—");
  assert.equal(fmt.percent("0.12345"), "12.35%");
  assert.equal(fmt.percent("1"), "100%");
  assert.equal(fmt.percent(null), "—");
  inLang("fr", () => {
    assert.equal(fmt.number("1234.5678", 2), "1\u202f234,57");
    assert.equal(fmt.percent("0.12345"), "12,35\u00a0%");
  });
});

test("dates in UTC, per language", () => {
  assert.equal(fmt.date("2026-10-03"), "Oct 3, 2026");
  assert.equal(fmt.dateTime("2026-10-03T10:40:00Z"), "Oct 3, 2026, 10:40 AM");
  assert.equal(fmt.shortDay("2026-10-03T23:59:59Z"), "Oct 3");
  assert.equal(fmt.date("not a date"), "not a date");
  inLang("fr", () => {
    assert.equal(fmt.date("2026-10-03"), "3 oct. 2026");
    assert.equal(fmt.shortDay("2026-10-03"), "3 oct.");
  });
  const now = new Date("2026-12-05T23:30:00Z");
  assert.equal(fmt.utcDay(0, now), "2026-12-05");
  assert.equal(fmt.utcDay(-30, now), "2026-11-05");
  assert.deepEqual(fmt.daysOf("2026-10-30", "2026-11-02"), ["2026-10-30", "2026-10-31", "2026-11-01"]);
  assert.deepEqual(fmt.daysOf("2026-10-30T12:00:00Z", "2026-10-31T00:00:00Z"), ["2026-10-30"]);
  assert.deepEqual(fmt.daysOf("bad", "2026-10-31"), []);
});
