// @ts-check
// The one DOM builder of the portal: `h(tag, props, ...children)` for HTML, `s(...)` for SVG, and the icons.
// Every text goes in as text, never as HTML (the page's CSP forbids inline script and style anyway).

/** What a view may give as a child: nodes, text, numbers, nothing (null, undefined, false), or arrays of them. */
/** @typedef {Node | string | number | null | undefined | false} Leaf */
/** @typedef {Leaf | readonly any[]} Child a leaf, or (nested) arrays of them */

/** Attributes and listeners: `class`, `on<event>` (a function), `value` and `checked` (properties), any other
 * attribute (`true` gives an empty attribute; null, undefined and false leave it out). */
/** @typedef {Record<string, any>} Props */

/** @param {Element} el @param {Child[]} children */
function appendAll(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

/**
 * An HTML element.
 * @param {string} tag
 * @param {Props | null} [props]
 * @param {...Child} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") /** @type {HTMLInputElement} */ (el).value = v;
    else if (k === "checked") /** @type {HTMLInputElement} */ (el).checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  appendAll(el, children);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";

/**
 * An SVG element (attributes only: null and undefined leave one out).
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...Child} children
 * @returns {SVGElement}
 */
export function s(tag, attrs = {}, ...children) {
  const el = /** @type {SVGElement} */ (document.createElementNS(SVG, tag));
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  appendAll(el, children);
  return el;
}

/**
 * A stroked 24x24 icon from its paths.
 * @param {string[]} paths
 * @param {Record<string, string | number>} [extra]
 */
export function svgIcon(paths, extra = {}) {
  return s("svg", { viewBox: "0 0 24 24", width: 20, height: 20, "aria-hidden": "true", focusable: "false", fill: "none", stroke: "currentColor", "stroke-width": 2, "stroke-linecap": "round", "stroke-linejoin": "round", ...extra },
    paths.map((d) => s("path", { d })));
}

export const ICON_REFRESH = ["M20 11a8 8 0 1 0-2.34 5.66", "M20 4v7h-7"];
export const ICON_CLOSE = ["M6 6l12 12", "M18 6L6 18"];
export const ICON_PLUS = ["M12 5v14", "M5 12h14"];
export const ICON_ALERT = ["M12 9v4", "M12 17h.01", "M10.3 3.9L1.8 18a2 2 0 0 0 1.7 3h17a2 2 0 0 0 1.7-3L13.7 3.9a2 2 0 0 0-3.4 0z"];
export const ICON_EMPTY = ["M3 7h18v13H3z", "M3 7l3-4h12l3 4", "M9 12h6"];
export const ICON_LOCK = ["M5 11h14v10H5z", "M8 11V7a4 4 0 0 1 8 0v4"];

/**
 * The first element `sel` selects (typed loosely: views know what they look up).
 * @param {string} sel
 * @returns {any}
 */
export const $ = (sel) => document.querySelector(sel);
