// The inspector shell: sign-in, the view router (location.hash), the key's identity and scopes.

import { ApiError, api, clearKey, getKey, onUnauthorized, setKey } from "./api.js";
import { badge, field, h, message, replace } from "./dom.js";
import { assembleView } from "./views/assemble.js";
import { eventsView } from "./views/events.js";
import { graphView } from "./views/graph.js";
import { memoriesView, memoryView } from "./views/memories.js";
import { timelineView } from "./views/timeline.js";

const VIEWS = [
  { name: "memories", label: "Memories", render: memoriesView },
  { name: "memory", label: null, nav: "memories", render: memoryView },
  { name: "timeline", label: "Fact timelines", render: timelineView },
  { name: "graph", label: "Entity graph", render: graphView },
  { name: "assemble", label: "Assemble playground", render: assembleView },
  { name: "events", label: "Live events", render: eventsView },
];

/** What the signed-in key is: {key_id, org_id, scopes, canWrite}. */
export const session = { key: null };

let leaving = null; // aborts when the current view is left (its teardown listens: e.g. the event stream)

/** Parse "#/view/arg?x=1" into {name, arg, params}; `invalid` is set when the arg is no valid %-encoding. */
export function parseRoute(hash) {
  const raw = (hash || "").replace(/^#\/?/, "");
  const [path, queryString] = raw.split("?", 2);
  const [name, ...rest] = path.split("/");
  let arg = null;
  let invalid = false;
  try {
    arg = rest.length ? decodeURIComponent(rest.join("/")) : null;
  } catch {
    invalid = true; // URIError: e.g. a truncated %E0%A4%A
  }
  return { name: name || "memories", arg, invalid, params: new URLSearchParams(queryString || "") };
}

/** A hash link to a view with parameters (empty ones left out). */
export function routeHref(name, params, arg) {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "") query.set(k, v);
  }
  const qs = query.toString();
  return `#/${name}${arg ? `/${encodeURIComponent(arg)}` : ""}${qs ? `?${qs}` : ""}`;
}

export function navigate(name, params, arg) {
  const href = routeHref(name, params, arg);
  if (window.location.hash === href) render();
  else window.location.hash = href;
}

function renderNav(active) {
  const nav = document.getElementById("nav");
  const items = VIEWS.filter((v) => v.label).map((v) => {
    const current = v.name === active;
    return h("li", {}, h("a", { href: `#/${v.name}`, "aria-current": current ? "page" : undefined }, v.label));
  });
  replace(nav, h("ul", {}, items));
  nav.hidden = !session.key;
}

function renderIdentity() {
  const box = document.getElementById("identity");
  if (!session.key) {
    replace(box);
    return;
  }
  const { org_id: org, key_id: keyId, scopes, canWrite } = session.key;
  replace(box,
    h("span.who", { title: `API key ${keyId}` }, "org ", h("strong", {}, org), " "),
    h("span.scopes", { "aria-label": "scopes" }, scopes.map((sc) => badge(sc, "scope"))),
    canWrite ? null : badge("read-only", "readonly"),
    h("button.link", { type: "button", id: "sign-out", onclick: signOut }, "Sign out"));
}

function signOut(reason) {
  clearKey();
  session.key = null;
  render(typeof reason === "string" ? reason : null);
}

async function loadIdentity() {
  const info = await api.get("/v0/keys/self");
  session.key = { ...info, canWrite: info.scopes.includes("write") };
}

function signInView(main, note) {
  const input = h("input", { type: "password", name: "key", autocomplete: "off", required: true,
    spellcheck: "false", placeholder: "loci_…" });
  const status = h("div", { "aria-live": "polite" }, note ? message("error", note) : null);
  const form = h("form.signin", {
    "aria-labelledby": "signin-title",
    onsubmit: async (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      setKey(key);
      replace(status, message("info", "Checking the key…"));
      try {
        await loadIdentity();
        render();
      } catch (error) {
        clearKey();
        const why = error instanceof ApiError ? error.message : String(error);
        replace(status, message("error", `Sign-in failed: ${why}`));
        input.focus();
      }
    },
  },
  h("h2#signin-title", { tabindex: "-1" }, "Sign in"),
  h("p", {}, "Paste an API key (", h("code", {}, "loci keys create --org ORG"), "). It is kept in this tab's ",
    "session storage only, and the inspector sees exactly what the key may see."),
  field("API key", input),
  h("button.primary", { type: "submit" }, "Sign in"),
  status);
  replace(main, form);
  input.focus();
}

export async function render(note) {
  if (leaving) leaving.abort();
  const visit = new AbortController();
  leaving = visit;
  const main = document.getElementById("main");
  const route = parseRoute(window.location.hash);
  if (!session.key && getKey()) {
    try {
      await loadIdentity();
    } catch (error) {
      clearKey();
      note = error instanceof ApiError ? error.message : String(error);
    }
    if (visit.signal.aborted) return; // another render took over meanwhile
  }
  renderIdentity();
  if (!session.key) {
    renderNav(null);
    signInView(main, note);
    return;
  }
  const view = VIEWS.find((v) => v.name === route.name) || VIEWS[0];
  renderNav(view.nav || view.name);
  document.title = `${view.label || "Memory"} · Loci inspector`;
  const { signal } = visit;
  // onCleanup(fn): fn runs when the view is left, at once if it already was
  const onCleanup = (fn) => (signal.aborted ? fn() : signal.addEventListener("abort", () => fn(), { once: true }));
  const ctx = { route, session, navigate, routeHref, signal, onCleanup };
  replace(main);
  try {
    if (route.invalid) {
      main.append(h("h2", { tabindex: "-1" }, "Not found"),
        message("error", `The address ${window.location.hash} is not valid (a broken %-escape).`));
    } else {
      await view.render(main, ctx);
    }
  } catch (error) {
    if (signal.aborted) return;
    main.append(message("error", error instanceof ApiError ? `${error.status} ${error.code}: ${error.message}` : String(error)));
  }
  if (signal.aborted) return;
  const heading = main.querySelector("h2");
  if (heading && !main.contains(document.activeElement)) heading.focus({ preventScroll: true });
}

onUnauthorized((error) => {
  if (session.key) signOut(`Signed out: ${error.message}`);
});
window.addEventListener("hashchange", () => {
  if (!window.location.hash || window.location.hash.startsWith("#/")) render(); // not the skip link's #main
});
render();
