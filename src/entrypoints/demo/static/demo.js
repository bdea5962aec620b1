// The authgate demo page: plain JavaScript, no build step, no third-party code.
// It talks to the service's API with the HttpOnly session cookie (the page never sees the
// token): GET /v1/account, DELETE /v1/account/providers/{provider}, POST /v1/auth/logout.
// The API is at apiBase (config.json): "" when the service serves this page itself, else the
// service's origin, the page being the application on its own origin (app.allowed_origins).
"use strict";

// The callback's error and reason (README: "Redirect reasons"), in words.
const REASONS = {
  "access_denied/user_denied":
    "You denied the request at the provider, so you were not signed in.",
  "account_not_found/no_account_for_provider":
    "There is no account for that provider identity yet. Create an account first, or sign in " +
    "with a provider that is already linked to your account.",
  "authentication_failed/token_exchange_failed":
    "The sign-in could not be completed: the provider did not accept the exchange of its code " +
    "for tokens. Please try again.",
  "authentication_failed/invalid_id_token":
    "The provider's identity token did not pass verification, so the sign-in was refused.",
  "authentication_failed/email_not_verified":
    "The provider says the email address of that identity is not verified, so the sign-in " +
    "was refused.",
  "authentication_failed/provider_error":
    "The provider reported an error instead of completing the sign-in (for example, you " +
    "cancelled it).",
  "account_conflict/identity_linked_to_another_account":
    "That provider identity already belongs to another account, so it cannot be linked to " +
    "this one.",
};
const ERRORS = {
  access_denied: "The request was denied at the provider.",
  account_not_found: "No account exists for that provider identity.",
  authentication_failed: "Authentication with the provider failed.",
  account_conflict: "That provider identity belongs to another account.",
  invalid_state:
    "The sign-in expired or was started in another browser window. Please start again.",
};

const $ = (id) => document.getElementById(id);

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Where the API is, and whether the session cookie must be sent to another origin.
let apiBase = "";
let credentials = "same-origin";

function useApi(base) {
  apiBase = (base || "").replace(/\/+$/, "");
  const cross = apiBase !== "" && new URL(apiBase).origin !== location.origin;
  // Another origin answers with CORS headers naming this page's origin; the cookie goes along
  // only with "include".
  credentials = cross ? "include" : "same-origin";
}

async function api(method, path) {
  const response = await fetch(apiBase + path, {
    method,
    credentials,
    headers: { Accept: "application/json" },
  });
  let body = null;
  if (response.status !== 204) {
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
  }
  return { status: response.status, body };
}

function formatTime(iso) {
  if (!iso) return "—";
  const when = new Date(iso);
  return el("time", { datetime: iso }, when.toLocaleString());
}

class Demo {
  constructor(config) {
    this.config = config;
    this.labels = Object.fromEntries(config.providers.map((p) => [p.id, p.label]));
    this.base = config.base;
  }

  label(id) {
    return this.labels[id] || id;
  }

  page() {
    const rest = location.pathname.slice(this.base.length) || "/";
    const pages = this.config.pages;
    for (const name of ["login", "onboarding", "dashboard"]) {
      if (rest === pages[name]) return name;
    }
    return "home";
  }

  // A link that starts a sign-in; a plain navigation, so the service answers with a redirect.
  startUrl(provider, intent, returnTo) {
    const callbacks = provider.callbackUrls;
    const service = new URL(apiBase || location.origin).origin;
    const redirect = callbacks.find((u) => new URL(u).origin === service) || callbacks[0] || "";
    const query = new URLSearchParams({ redirect_uri: redirect, intent, return_to: returnTo });
    return `${apiBase}/v1/auth/${encodeURIComponent(provider.id)}?${query}`;
  }

  providerButtons(list, intent, verb, only) {
    list.replaceChildren();
    for (const provider of this.config.providers) {
      if (only && !only(provider)) continue;
      const next = `${this.config.pages.dashboard}?${intent === "link" ? "linked" : "signed_in"}=${provider.id}`;
      const link = el(
        "a",
        {
          class: "button",
          href: this.startUrl(provider, intent, next),
          "data-provider": provider.id,
          "data-intent": intent,
        },
        `${verb} ${provider.label}`,
      );
      list.append(el("li", {}, link, " ", el("span", { class: "hint" }, provider.kind)));
    }
  }

  // After an action the button that was pressed may be gone: keyboard focus moves to the
  // message that tells what happened.
  notice(text, focus = false) {
    const box = $("notice");
    box.textContent = text;
    box.hidden = !text;
    if (text && focus) box.focus();
  }

  problem(text, codes, focus = false, action = null) {
    $("problem").hidden = !text;
    $("problem-text").textContent = text || "";
    $("problem-codes").textContent = codes || "";
    $("problem-action").replaceChildren(...(action ? [action] : []));
    if (text && focus) $("problem").focus();
  }

  problemFromQuery(params) {
    const error = params.get("error");
    if (!error) return;
    const reason = params.get("reason") || "";
    const text =
      REASONS[`${error}/${reason}`] ||
      ERRORS[error] ||
      "The sign-in did not complete.";
    this.problem(text, `error: ${error}${reason ? `, reason: ${reason}` : ""}`);
  }

  showSignedOut() {
    $("title").textContent = "Sign in or create an account";
    $("signed-in").hidden = true;
    $("signed-out").hidden = false;
    this.providerButtons($("signin-buttons"), "login", "Sign in with");
    this.providerButtons($("register-buttons"), "register", "Register with");
  }

  showAccount(account) {
    $("title").textContent = account.name ? `Welcome, ${account.name}` : "Your account";
    $("signed-out").hidden = true;
    $("signed-in").hidden = false;
    $("account-name").textContent = account.name || "—";
    $("account-email").textContent = account.email || "—";
    // Only an address the provider vouched for is called verified (emailVerified is false
    // when the provider said false or did not say, as the facebook shape never does).
    const status = $("account-email-status");
    status.hidden = !account.email;
    status.textContent = account.emailVerified ? "verified" : "not verified";
    status.dataset.verified = account.emailVerified ? "true" : "false";
    $("account-id").textContent = account.id;
    $("account-created").replaceChildren(formatTime(account.createdAt));
    $("account-last-sign-in").replaceChildren(formatTime(account.lastSignInAt));
    this.showProviders(account.providers);
  }

  showProviders(providers) {
    const rows = $("linked-providers");
    rows.replaceChildren();
    for (const p of providers) {
      const unlink = el(
        "button",
        {
          type: "button",
          class: "unlink",
          "data-provider": p.provider,
          "aria-label": `Unlink ${this.label(p.provider)}`,
        },
        "Unlink",
      );
      unlink.addEventListener("click", () => this.unlink(p.provider));
      rows.append(
        el(
          "tr",
          { "data-provider": p.provider },
          el("th", { scope: "row" }, this.label(p.provider)),
          el("td", {}, el("code", {}, p.providerId)),
          el("td", {}, formatTime(p.linkedAt)),
          el("td", {}, p.isPrimary ? "yes" : "no"),
          el("td", {}, unlink),
        ),
      );
    }
    const linked = new Set(providers.map((p) => p.provider));
    this.linked = linked;
    const unlinked = (p) => !linked.has(p.id);
    this.providerButtons($("link-buttons"), "link", "Link", unlinked);
    $("link-none").hidden = this.config.providers.some(unlinked);
  }

  async refresh() {
    const me = await api("GET", "/v1/account");
    $("loading").hidden = true;
    if (me.status === 200) {
      this.showAccount(me.body);
      return me.body;
    }
    this.showSignedOut();
    return null;
  }

  async unlink(provider) {
    this.notice("");
    this.problem("");
    const answer = await api("DELETE", `/v1/account/providers/${encodeURIComponent(provider)}`);
    if (answer.status === 200) {
      this.showProviders(answer.body.providers);
      this.notice(`${this.label(provider)} was unlinked from your account.`, true);
    } else if (answer.status === 409) {
      this.problem(
        `${this.label(provider)} is the only provider linked to your account. Link another ` +
          "provider before unlinking it, or you could never sign in again.",
        `error: ${answer.body && answer.body.error}`,
        true,
      );
    } else if (answer.status === 401 && answer.body && answer.body.error === "reauthentication_required") {
      // RFC 9470: the sign-in is too old for an account change; sign in again, then retry.
      const again = this.config.providers.find(
        (p) => p.id !== provider && this.linked.has(p.id),
      ) || this.config.providers.find((p) => p.id === provider);
      const next = `${this.config.pages.dashboard}?reauthenticated=${again.id}`;
      const action = el(
        "a",
        { class: "button", href: this.startUrl(again, "reauthenticate", next), id: "reauthenticate" },
        `Sign in again with ${again.label}`,
      );
      this.problem(
        `For your security, unlinking ${this.label(provider)} needs a recent sign-in. ` +
          "Sign in again, then unlink it.",
        "error: reauthentication_required",
        true,
        action,
      );
    } else if (answer.status === 401) {
      this.showSignedOut();
      this.problem("Your session has ended. Please sign in again.", "", true);
    } else {
      const message = (answer.body && (answer.body.message || answer.body.error)) || "";
      this.problem(`Unlinking failed (HTTP ${answer.status}). ${message}`, "", true);
    }
  }

  async signOut() {
    this.notice("");
    this.problem("");
    const answer = await api("POST", "/v1/auth/logout");
    if (answer.status === 204) {
      history.replaceState(null, "", this.base || "/");
      this.showSignedOut();
      this.notice("You are signed out.", true);
    } else {
      this.problem(`Signing out failed (HTTP ${answer.status}).`, "", true);
    }
  }

  async start() {
    const params = new URLSearchParams(location.search);
    const page = this.page();
    if (page === "login") this.problemFromQuery(params);
    $("sign-out").addEventListener("click", () => this.signOut());
    const account = await this.refresh();
    if (!account) {
      if (page === "dashboard" || page === "onboarding") {
        this.notice("You are not signed in.");
      }
      return;
    }
    const primary = account.providers.find((p) => p.isPrimary);
    if (page === "onboarding") {
      this.notice(
        `Welcome! Your account was created with ${this.label(primary ? primary.provider : "")}.`,
      );
    } else if (params.get("linked")) {
      this.notice(`${this.label(params.get("linked"))} is now linked to your account.`);
    } else if (params.get("reauthenticated")) {
      this.notice(
        `You signed in again with ${this.label(params.get("reauthenticated"))}: account changes are open for a few minutes.`,
      );
    } else if (params.get("signed_in")) {
      this.notice(`You are signed in with ${this.label(params.get("signed_in"))}.`);
    }
    if (page !== "login") history.replaceState(null, "", location.pathname);
  }
}

async function main() {
  try {
    const response = await fetch("/demo/config.json", { headers: { Accept: "application/json" } });
    const config = await response.json();
    useApi(config.apiBase);
    for (const link of document.querySelectorAll("a[data-api-link]")) {
      link.href = apiBase + link.getAttribute("href");
    }
    const demo = new Demo(config);
    await demo.start();
  } catch (e) {
    $("loading").textContent = `The demo could not start: ${e}`;
  }
}

main();
