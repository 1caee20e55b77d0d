// DOM helpers: build elements without innerHTML (no markup injection, nothing inline for the CSP).

const SVG_NS = "http://www.w3.org/2000/svg";

function applyAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "style") {
      Object.assign(el.style, value); // CSSOM, allowed by style-src 'self'
    } else if (name === "value" && "value" in el) {
      el.value = value;
    } else if (name === "checked" || name === "selected" || name === "disabled") {
      el[name] = Boolean(value);
      if (name === "disabled") el.setAttribute("disabled", "");
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** h("tag#id.class", {attrs}, ...children): an HTML element. */
export function h(spec, attrs, ...children) {
  const tag = spec.match(/^[a-z0-9-]+/i)[0];
  const el = document.createElement(tag);
  for (const [, kind, name] of spec.slice(tag.length).matchAll(/([#.])([^#.]+)/g)) {
    if (kind === "#") el.id = name;
    else el.classList.add(name);
  }
  applyAttrs(el, attrs);
  return append(el, children);
}

/** s("tag", {attrs}, ...children): an SVG element. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  applyAttrs(el, attrs);
  return append(el, children);
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

export function replace(el, ...children) {
  return append(clear(el), children);
}

let uid = 0;
/** A fresh id for label/aria wiring. */
export function nextId(prefix = "f") {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A labelled form field: <div class="field"><label for=id>text</label> control</div>. */
export function field(labelText, control, hint) {
  const id = control.id || nextId("field");
  control.id = id;
  const parts = [h("label", { for: id }, labelText), control];
  if (hint) {
    const hintId = `${id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("small.hint", { id: hintId }, hint));
  }
  return h("div.field", {}, parts);
}

/** A select showing `value`; one no option names (e.g. an address's type=fact,note) is added as it is,
 * so the box shows what is applied and the next submit keeps it. */
export function select(name, options, value) {
  const all = value && !options.some(([v]) => v === value) ? [...options, [value, value]] : options;
  return h("select", { name },
    all.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

export function fmtDateTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/:00Z$/, "Z");
}

/** A datetime-local box (UTC, to the millisecond) holding the moment `iso` names, offsets included. */
export function momentInput(name, iso) {
  const d = new Date(iso || "");
  const value = Number.isNaN(d.getTime()) ? "" : d.toISOString().slice(0, 23);
  return h("input", { name, type: "datetime-local", step: "0.001", value });
}

/** The moment a momentInput holds as RFC 3339 UTC, "" when empty (the browser drops zero seconds). */
export function momentValue(input) {
  const v = input.value;
  return v ? `${v.length === 16 ? `${v}:00` : v}Z` : "";
}

export function fmtDay(value) {
  if (value === null || value === undefined) return "";
  const d = value instanceof Date ? value : new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().slice(0, 10);
}

export function fmtNum(x, digits = 3) {
  return typeof x === "number" ? x.toFixed(digits) : "";
}

/** Text cut to n characters with an ellipsis (tables show the start; the record shows it all). */
export function clip(text, n = 200) {
  const t = String(text ?? "");
  return t.length > n ? `${t.slice(0, n - 1).trimEnd()}…` : t;
}

export function json(value) {
  return JSON.stringify(value, null, 2);
}

/** A status badge: the word is always shown, colour only adds to it. */
export function badge(text, kind) {
  return h(`span.badge.badge-${kind || text}`, {}, text);
}

export function message(kind, text) {
  return h(`p.msg.msg-${kind}`, { role: kind === "error" ? "alert" : "status" }, text);
}

/** Put the current view's parameters in the address bar without re-rendering it. */
export function setHash(href) {
  if (window.location.hash !== href) window.history.replaceState(null, "", href);
}
