// The authgate demo page: plain JavaScript, no build step, no third-party code.
// It talks to the service's API with the HttpOnly session cookie (the page never sees the
// token): GET /v1/account, DELETE /v1/account/providers/{provider}, GET and DELETE
// /v1/account/sessions[/{id}], POST /v1/auth/logout, and the passkey ceremonies
// (/v1/account/passkeys/registration[/options], /v1/passkeys/authentication[/options]) with
// the browser's WebAuthn API.
// The API is at apiBase (config.json): "" when the service serves this page itself, else the
// service's origin, the page being the application on its own origin (app.allowed_origins).
"use strict";

// The callback's error and reason (docs/api.md, "Redirect errors"), in words.
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
// The re-authentication's refusals name the provider the page sent the user to.
const STEP_UP_REASONS = {
  "authentication_failed/reauthentication_identity_mismatch": (provider) =>
    `You re-authenticated as a different account at ${provider || "the provider"} than the ` +
    "one you are signed in with, so nothing changed. Sign in again as the account you use here.",
  "authentication_failed/stale_provider_authentication": (provider) =>
    `${provider || "The provider"} did not ask you to sign in again: its sign-in was older ` +
    "than the request, so it does not prove you are still here. Nothing changed; please try " +
    "again.",
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

// What the page remembers between loads. The session cookie is HttpOnly, so the page cannot
// see it: "signed-in" (this origin's localStorage, shared by its tabs) records that the last
// answer about the account was a signed-in one. Without it the page knows it is signed out and
// asks nothing (no failing request on every signed-out load); with it, a 401 means the session
// was ended elsewhere, not that the person never signed in. "step-up" (this tab) keeps the
// provider a re-authentication was sent to and the window the API named, for the return.
const SIGNED_IN = "authgate-demo.signed-in";
const STEP_UP = "authgate-demo.step-up";

function remembered(storage, key) {
  try {
    return storage.getItem(key);
  } catch (_) {
    return null; // storage turned off: the page behaves as if it remembered nothing
  }
}

function remember(storage, key, value) {
  try {
    if (value === null) storage.removeItem(key);
    else storage.setItem(key, value);
  } catch (_) {
    // storage turned off
  }
}

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

async function api(method, path, json) {
  const headers = { Accept: "application/json" };
  if (json !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(apiBase + path, {
    method,
    credentials,
    headers,
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  let body = null;
  if (response.status !== 204) {
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
  }
  return { status: response.status, body, headers: response.headers };
}

// RFC 9470: the step-up challenge's max_age, the window of a fresh sign-in, in seconds.
function maxAgeOf(answer) {
  const challenge = answer.headers.get("WWW-Authenticate") || "";
  const found = /(?:^|[\s,])max_age="?(\d+)"?/.exec(challenge);
  return found ? Number(found[1]) : null;
}

// WebAuthn's JSON forms carry bytes as base64url; the browser's API takes ArrayBuffers.
function fromBase64url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0)).buffer;
}

function toBase64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const withIds = (list) => (list || []).map((d) => ({ ...d, id: fromBase64url(d.id) }));

function creationOptions(o) {
  return {
    ...o,
    challenge: fromBase64url(o.challenge),
    user: { ...o.user, id: fromBase64url(o.user.id) },
    excludeCredentials: withIds(o.excludeCredentials),
  };
}

function requestOptions(o) {
  return { ...o, challenge: fromBase64url(o.challenge), allowCredentials: withIds(o.allowCredentials) };
}

// credential.toJSON() where the browser has it, else the same members by hand.
function credentialJson(credential) {
  if (typeof credential.toJSON === "function") return credential.toJSON();
  const r = credential.response;
  const response = { clientDataJSON: toBase64url(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = toBase64url(r.attestationObject);
    if (r.getTransports) response.transports = r.getTransports();
  } else {
    response.authenticatorData = toBase64url(r.authenticatorData);
    response.signature = toBase64url(r.signature);
    if (r.userHandle) response.userHandle = toBase64url(r.userHandle);
  }
  return {
    id: credential.id,
    rawId: toBase64url(credential.rawId),
    type: credential.type,
    response,
    clientExtensionResults: credential.getClientExtensionResults(),
  };
}

// Whether this page's host may use the service's RP ID (a browser refuses any other).
function underRpId(rpId) {
  const host = location.hostname;
  return host === rpId || host.endsWith(`.${rpId}`);
}

const PASSKEY_ERRORS = {
  invalid_challenge: "The passkey request expired or was answered in another window. Please try again.",
  unknown_passkey: "No account has that passkey: it may have been removed. Sign in with a provider.",
  passkey_already_registered: "That passkey is already added.",
  last_sign_in_method:
    "That passkey is your account's only way to sign in. Add another passkey or link a provider first.",
};

function duration(seconds) {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 120) return `${minutes} minutes`;
  return `${Math.round(minutes / 60)} hours`;
}

// The session's device in words, from the user agent of its sign-in.
function device(userAgent) {
  if (!userAgent) return "Unknown device";
  const ua = userAgent;
  const browser =
    (/Edg\//.test(ua) && "Edge") ||
    (/Firefox\//.test(ua) && "Firefox") ||
    (/HeadlessChrome\//.test(ua) && "Headless Chrome") ||
    (/(Chrome|CriOS)\//.test(ua) && "Chrome") ||
    (/Safari\//.test(ua) && "Safari") ||
    "A browser";
  const system =
    (/iPhone|iPad/.test(ua) && "iOS") ||
    (/Android/.test(ua) && "Android") ||
    (/Windows/.test(ua) && "Windows") ||
    (/Mac OS X|Macintosh/.test(ua) && "macOS") ||
    (/Linux|X11/.test(ua) && "Linux") ||
    "";
  return system ? `${browser} on ${system}` : browser;
}

// Where a passkey was added: the browser and address of the session that added it (kept
// with the passkey), and whether that is this session.
function addedFrom(passkey, current) {
  if (!passkey.addedBySession) return "";
  const address = passkey.addedFromAddress ? ` · ${passkey.addedFromAddress}` : "";
  const here = current && current.id === passkey.addedBySession ? " (this session)" : "";
  return ` from ${device(passkey.addedFromUserAgent)}${address}${here}`;
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
    this.labels.passkey = "a passkey";
    this.base = config.base;
    this.autofill = null; // the passkey field's waiting request: { asking, done }
    this.currentSession = null; // this device's session as GET /v1/account/sessions lists it
    this.otherSessions = new Set(); // the ids of the other live sessions
    this.passkeyList = null; // the account's passkeys (null: not read, or passkeys off)
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

  // ``kind``: "problem" (red, an alert) or "neutral" (a sign-out, not an error). Any message
  // replaces a step-up prompt still shown.
  problem(text, codes, focus = false, action = null, heading = "That did not work", kind = "problem") {
    $("step-up").hidden = true;
    $("problem").className = `message ${kind}`;
    $("problem").setAttribute("role", kind === "problem" ? "alert" : "status");
    $("problem").hidden = !text;
    $("problem-heading").textContent = heading;
    $("problem-text").textContent = text || "";
    $("problem-codes").textContent = codes || "";
    $("problem-action").replaceChildren(...(action ? [action] : []));
    if (text && focus) $("problem").focus();
  }

  problemFromQuery(params) {
    const error = params.get("error");
    if (!error) return;
    const reason = params.get("reason") || "";
    const stepUp = STEP_UP_REASONS[`${error}/${reason}`];
    const text =
      (stepUp && stepUp(this.label(this.stepUp().provider || ""))) ||
      REASONS[`${error}/${reason}`] ||
      ERRORS[error] ||
      "The sign-in did not complete.";
    this.problem(text, `error: ${error}${reason ? `, reason: ${reason}` : ""}`);
  }

  // The step-up prompt: a change needs a recent sign-in; ``action`` is the way back.
  prompt(text, action) {
    this.problem("");
    $("step-up-text").textContent = text;
    $("step-up-action").replaceChildren(action);
    $("step-up").hidden = false;
    $("step-up").focus();
  }

  // The re-authentication this tab started: { provider, maxAge, resume }.
  stepUp() {
    try {
      return JSON.parse(remembered(sessionStorage, STEP_UP) || "{}") || {};
    } catch (_) {
      return {};
    }
  }

  // A change refused for an old sign-in (401 reauthentication_required): offer to sign in
  // again, with a linked provider (not ``avoid``, the one about to be unlinked, when another
  // is linked), and remember the window the API named for the notice on return, and the
  // change asked for (``resume``: { kind, ... }, see ``resume``), done again on return.
  offerStepUp(answer, what, avoid = null, resume = null) {
    this.resuming = resume;
    const linked = this.config.providers.filter((p) => this.linked && this.linked.has(p.id));
    const hasPasskey = this.passkeyList !== null && this.passkeyList.length > 0;
    // Only a signed statement proves a login: a passkey, or a provider whose ID tokens sign
    // the time of the login (provesLogin). Facebook, or Google without its session age
    // claims, cannot: the page never offers them for a step-up.
    const proving = linked.filter((p) => p.provesLogin && p.id !== avoid);
    const withPasskey = this.passkeysUsable() && (hasPasskey || linked.length === 0);
    if (withPasskey && (this.signedInWith === "passkey" || proving.length === 0)) {
      // A passkey sign-in is a fresh one too (its auth_time is the moment it was verified).
      const again = el("button", { type: "button", id: "reauthenticate" }, "Sign in again with a passkey");
      again.addEventListener("click", () => {
        remember(sessionStorage, STEP_UP, JSON.stringify({ provider: "passkey", resume }));
        this.passkeySignIn();
      });
      this.prompt(
        `For your security, ${what} needs a recent sign-in. Sign in again, then try once more.`,
        again,
      );
      return;
    }
    const maxAge = maxAgeOf(answer);
    const within = maxAge ? ` within ${duration(maxAge)}` : "";
    if (proving.length === 0) {
      // Nothing this account holds can prove a login: a sign-in made just now is the most
      // recent evidence it can give (the service accepts it for the window).
      const again = linked.find((p) => p.id === this.signedInWith) || linked[0] || this.config.providers[0];
      this.offerSignInAgain(
        answer,
        again,
        "login",
        `For your security, ${what} needs a recent sign-in. ${again.label} cannot prove when ` +
          `you last signed in there: sign in again now, then try once more${within}. ` +
          "A passkey can prove it: add one once you are back.",
      );
      return;
    }
    const again = proving.find((p) => p.id === this.signedInWith) || proving[0];
    this.offerSignInAgain(
      answer,
      again,
      "reauthenticate",
      `For your security, ${what} needs a recent sign-in. Sign in again with ${again.label}, ` +
        "which proves when you did, then try once more.",
    );
  }

  // The step-up's way back through a provider (``intent``), remembering the window the API
  // named for the notice on return.
  offerSignInAgain(answer, provider, intent, text) {
    remember(
      sessionStorage,
      STEP_UP,
      JSON.stringify({ provider: provider.id, maxAge: maxAgeOf(answer), resume: this.resuming || null }),
    );
    const next = `${this.config.pages.dashboard}?reauthenticated=${provider.id}`;
    const action = el(
      "a",
      { class: "button", href: this.startUrl(provider, intent, next), id: "reauthenticate" },
      `Sign in again with ${provider.label}`,
    );
    this.prompt(text, action);
  }

  // The change the person asked for before a step-up, done now that they are back.
  async resume(what) {
    if (!what) return;
    if (what.kind === "addPasskey") await this.addPasskey();
    else if (what.kind === "removePasskey") await this.removePasskey(what.passkey);
    else if (what.kind === "withdrawApp") await this.withdrawApp(what.clientId, what.name);
    else if (what.kind === "endSession") await this.endSession(what.session);
    else if (what.kind === "endOtherSessions") {
      $("remove-other-passkeys").checked = what.removePasskeys;
      await this.endOtherSessions();
    } else if (what.kind === "unlink") await this.unlink(what.provider);
  }

  // The API refused the session cookie: the session ended since the page last knew it live.
  sessionEnded() {
    remember(localStorage, SIGNED_IN, null);
    this.showSignedOut();
    this.notice("");
    this.problem(
      "Your session was ended — signed out elsewhere or revoked. Sign in again.",
      "error: unauthorized",
      true,
      null,
      "You are signed out",
      "neutral",
    );
  }

  // Any other failure of a change, in words.
  failed(what, answer) {
    if (answer.status === 401 && answer.body && answer.body.error === "reauthentication_required") {
      return false;
    }
    if (answer.status === 401) {
      this.sessionEnded();
      return true;
    }
    const message = (answer.body && (answer.body.message || answer.body.error)) || "";
    this.problem(`${what} failed (HTTP ${answer.status}). ${message}`, "", true);
    return true;
  }

  showSignedOut() {
    $("title").textContent = "Sign in or create an account";
    $("signed-in").hidden = true;
    $("signed-out").hidden = false;
    this.providerButtons($("signin-buttons"), "login", "Sign in with");
    this.providerButtons($("register-buttons"), "register", "Register with");
    const passkeys = this.config.passkeys;
    const usable = this.passkeysUsable();
    $("passkey-signin").hidden = !usable;
    $("passkey-elsewhere").hidden = !passkeys || usable;
    if (passkeys && !usable) {
      $("passkey-elsewhere").textContent =
        `Passkeys work on pages under ${passkeys.rpId}: open this demo at ` +
        `http://${passkeys.rpId}:${location.port}/demo to use them.`;
    }
  }

  passkeysUsable() {
    const passkeys = this.config.passkeys;
    return Boolean(passkeys && window.PublicKeyCredential && underRpId(passkeys.rpId));
  }

  passkeyProblem(what, answer) {
    const code = answer.body && answer.body.error;
    const text = PASSKEY_ERRORS[code] || (answer.body && answer.body.message) || "";
    this.problem(`${what} did not work. ${text}`, code ? `error: ${code}` : `HTTP ${answer.status}`, true);
  }

  // Passkey autofill (WebAuthn conditional mediation): once the passkey field has the focus,
  // a request waits without a dialog, and the browser lists this device's passkeys for the
  // page among the field's suggestions; choosing one signs in. Asked on focus, not when the
  // page opens, so that a visit that never uses it leaves no challenge behind. The request
  // is aborted (and awaited) before the button's own: a browser runs one at a time.
  async autofillPasskey() {
    if (this.autofill || !this.passkeysUsable()) return;
    const conditional = PublicKeyCredential.isConditionalMediationAvailable;
    if (!conditional || !(await conditional.call(PublicKeyCredential))) return;
    if (this.autofill) return;
    const asking = new AbortController();
    let finished;
    this.autofill = { asking, done: new Promise((resolve) => (finished = resolve)) };
    try {
      const options = await api("POST", "/v1/passkeys/authentication/options");
      if (options.status !== 200 || asking.signal.aborted) return;
      let credential;
      try {
        credential = await navigator.credentials.get({
          mediation: "conditional",
          publicKey: requestOptions(options.body),
          signal: asking.signal,
        });
      } catch {
        return; // aborted for the button, or declined: the field and the button remain
      }
      this.notice("");
      this.problem("");
      await this.finishPasskeySignIn(credential);
    } finally {
      this.autofill = null;
      finished();
    }
  }

  async stopAutofill() {
    const running = this.autofill;
    if (!running) return;
    running.asking.abort();
    await running.done;
  }

  async passkeySignIn() {
    await this.stopAutofill();
    this.notice("");
    this.problem("");
    const options = await api("POST", "/v1/passkeys/authentication/options");
    if (options.status !== 200) return this.passkeyProblem("Signing in with a passkey", options);
    let credential;
    try {
      credential = await navigator.credentials.get({ publicKey: requestOptions(options.body) });
    } catch (e) {
      this.problem(`The browser did not use a passkey (${e.name}).`, "", true);
      return;
    }
    await this.finishPasskeySignIn(credential);
  }

  async finishPasskeySignIn(credential) {
    const answer = await api("POST", "/v1/passkeys/authentication", {
      ...credentialJson(credential),
      returnTo: `${this.config.pages.dashboard}?signed_in=passkey`,
    });
    if (answer.status !== 200) return this.passkeyProblem("Signing in with a passkey", answer);
    remember(localStorage, SIGNED_IN, "1");
    location.assign(answer.body.redirectTo);
  }

  async refreshPasskeys() {
    if (!this.config.passkeys) return;
    const answer = await api("GET", "/v1/account/passkeys");
    if (answer.status === 200) this.showPasskeys(answer.body.passkeys);
  }

  showPasskeys(passkeys) {
    this.passkeyList = passkeys;
    $("passkeys-section").hidden = false;
    $("passkeys-none").hidden = passkeys.length > 0;
    $("add-passkey").hidden = !this.passkeysUsable();
    const list = $("passkeys");
    list.replaceChildren();
    for (const p of passkeys) {
      const what = el(
        "p",
        { class: "device" },
        el("strong", {}, p.name),
        " ",
        p.backedUp ? el("span", { class: "tag" }, "synced") : "",
      );
      const when = el(
        "p",
        { class: "hint" },
        "Added ",
        formatTime(p.createdAt),
        addedFrom(p, this.currentSession),
        " · last used ",
        formatTime(p.lastUsedAt),
      );
      const remove = el(
        "button",
        { type: "button", class: "secondary", "aria-label": `Remove the passkey ${p.name}` },
        "Remove",
      );
      remove.addEventListener("click", () => this.removePasskey(p));
      list.append(el("li", { "data-passkey": p.id }, what, when, remove));
    }
    this.showPasskeyOffers();
  }

  // The passkeys added by the sessions "Sign out everywhere else" ends, but the one this
  // session signed in with: whoever held such a session could have added one of their own,
  // so the page offers to remove them too (docs/passkeys.md).
  addedElsewhere() {
    const held = this.currentSession && this.currentSession.passkeyId;
    return (this.passkeyList || []).filter(
      (p) => p.addedBySession && this.otherSessions.has(p.addedBySession) && p.id !== held,
    );
  }

  showPasskeyOffers() {
    const elsewhere = this.addedElsewhere();
    $("end-other-passkeys").hidden = elsewhere.length === 0;
    $("end-other-passkeys-text").textContent =
      `Also remove the passkeys those sessions added: ${elsewhere.map((p) => p.name).join(", ")}`;
    // A provider sign-in that proved nothing (no signed sign-in time): browsers never offer a
    // passkey after a federated sign-in on their own, so the page does, while there is none.
    const current = this.currentSession;
    const offer =
      this.passkeysUsable() &&
      this.passkeyList !== null &&
      this.passkeyList.length === 0 &&
      current !== null &&
      current.authTimeProven === false;
    $("passkey-offer").hidden = !offer;
    if (offer) {
      $("passkey-offer-text").textContent =
        `Your sign-in with ${this.label(current.provider)} did not prove when you last entered ` +
        "your password there. Add a passkey: next time this device's screen lock signs you " +
        "in, without a provider, and it proves it is you.";
    }
  }

  async addPasskey() {
    this.notice("");
    this.problem("");
    const options = await api("POST", "/v1/account/passkeys/registration/options");
    if (options.status !== 200) {
      if (!this.failed("Adding a passkey", options)) {
        this.offerStepUp(options, "adding a passkey", null, { kind: "addPasskey" });
      }
      return;
    }
    let credential;
    try {
      credential = await navigator.credentials.create({ publicKey: creationOptions(options.body) });
    } catch (e) {
      this.problem(`The browser did not make a passkey (${e.name}).`, "", true);
      return;
    }
    const answer = await api("POST", "/v1/account/passkeys/registration", {
      ...credentialJson(credential),
      name: device(navigator.userAgent),
    });
    if (answer.status !== 201) return this.passkeyProblem("Adding a passkey", answer);
    await this.refreshPasskeys();
    this.notice(`A passkey was added: ${answer.body.name}.`, true);
  }

  async removePasskey(passkey) {
    this.notice("");
    this.problem("");
    const answer = await api("DELETE", `/v1/account/passkeys/${encodeURIComponent(passkey.id)}`);
    if (answer.status === 204 || answer.status === 404) {
      await this.refreshPasskeys();
      this.notice(`The passkey ${passkey.name} was removed.`, true);
    } else if (answer.status === 409) {
      this.passkeyProblem("Removing the passkey", answer);
    } else if (!this.failed("Removing the passkey", answer)) {
      const resume = { kind: "removePasskey", passkey: { id: passkey.id, name: passkey.name } };
      this.offerStepUp(answer, "removing a passkey", null, resume);
    }
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
    this.account = account;
    $("account-created").replaceChildren(formatTime(account.createdAt));
    $("account-last-sign-in").replaceChildren(formatTime(account.lastSignInAt));
    this.showProviders(account.providers, account);
  }

  // What the providers call the person: the account's name and email address, which its
  // identities gave (the API's providerId, user:PROVIDER:SUBJECT, is the cell's title).
  identityName(account) {
    const email = account && account.email ? el("span", { class: "hint" }, account.email) : "";
    const name = (account && account.name) || "";
    return el("span", { class: "identity" }, name, name && email ? el("br") : "", email);
  }

  showProviders(providers, account = this.account) {
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
          el("td", { title: p.providerId }, this.identityName(account)),
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
      remember(localStorage, SIGNED_IN, "1");
      this.showAccount(me.body);
      await this.refreshSessions();
      await this.refreshApps();
      await this.refreshPasskeys();
      return me.body;
    }
    if (me.status === 401 && remembered(localStorage, SIGNED_IN)) {
      this.sessionEnded();
      return null;
    }
    this.showSignedOut();
    return null;
  }

  async refreshSessions() {
    const answer = await api("GET", "/v1/account/sessions");
    if (answer.status === 200) {
      this.showSessions(answer.body.sessions);
    } else if (answer.status === 401) {
      this.sessionEnded();
    }
  }

  showSessions(sessions) {
    const list = $("sessions");
    list.replaceChildren();
    // This device first, then the newest.
    const ordered = [...sessions].sort(
      (a, b) => b.current - a.current || b.createdAt.localeCompare(a.createdAt),
    );
    this.currentSession = sessions.find((s) => s.current) || null;
    this.otherSessions = new Set(sessions.filter((s) => !s.current).map((s) => s.id));
    for (const s of ordered) {
      if (s.current) this.signedInWith = s.provider;
      const what = el(
        "p",
        { class: "device" },
        el("strong", { title: s.userAgent || "" }, device(s.userAgent)),
        s.address ? ` · ${s.address}` : "",
        " ",
        s.current ? el("span", { class: "tag current" }, "This device") : "",
      );
      const when = el(
        "p",
        { class: "hint" },
        `Signed in with ${this.label(s.provider)} `,
        formatTime(s.createdAt),
        " · ends ",
        formatTime(s.expiresAt),
      );
      const item = el("li", { "data-session": s.id, "data-current": String(s.current) }, what, when);
      if (!s.current) {
        const end = el(
          "button",
          { type: "button", class: "secondary", "aria-label": `End the session of ${device(s.userAgent)}` },
          "End",
        );
        end.addEventListener("click", () => this.endSession(s));
        item.append(end);
      }
      list.append(item);
    }
    $("end-other-sessions").hidden = !sessions.some((s) => !s.current);
    this.showPasskeyOffers();
  }

  // The applications the person consented to (only when applications are registered).
  async refreshApps() {
    if (!this.config.apps) return;
    const answer = await api("GET", "/v1/account/apps");
    if (answer.status === 200) {
      this.showApps(answer.body.apps);
    } else if (answer.status === 401) {
      this.sessionEnded();
    }
  }

  showApps(apps) {
    $("apps-section").hidden = false;
    $("apps-none").hidden = apps.length > 0;
    const list = $("apps");
    list.replaceChildren();
    for (const a of apps) {
      const name = a.name || a.clientId;
      const what = el("p", { class: "device" }, el("strong", {}, name), " · ", el("code", {}, a.clientId));
      const when = el(
        "p",
        { class: "hint" },
        `May use: ${a.scopes.join(", ")} · allowed `,
        formatTime(a.grantedAt),
        a.lastUsedAt ? " · last used " : "",
        a.lastUsedAt ? formatTime(a.lastUsedAt) : "",
      );
      const withdraw = el(
        "button",
        { type: "button", class: "secondary", "aria-label": `Withdraw ${name}` },
        "Withdraw",
      );
      withdraw.addEventListener("click", () => this.withdrawApp(a.clientId, name));
      list.append(el("li", { "data-client": a.clientId }, what, when, withdraw));
    }
  }

  async withdrawApp(clientId, name) {
    this.notice("");
    this.problem("");
    const answer = await api("DELETE", `/v1/account/apps/${encodeURIComponent(clientId)}`);
    if (answer.status === 204 || answer.status === 404) {
      await this.refreshApps();
      this.notice(`${name} no longer has access to your account.`, true);
    } else if (!this.failed("Withdrawing the application", answer)) {
      this.offerStepUp(answer, `withdrawing ${name}`, null, { kind: "withdrawApp", clientId, name });
    }
  }

  async endSession(session) {
    this.notice("");
    this.problem("");
    const answer = await api("DELETE", `/v1/account/sessions/${encodeURIComponent(session.id)}`);
    if (answer.status === 204 || answer.status === 404) {
      await this.refreshSessions();
      this.notice(
        answer.status === 204
          ? `The session of ${device(session.userAgent)} was ended.`
          : "That session had already ended.",
        true,
      );
    } else if (!this.failed("Ending the session", answer)) {
      const resume = { kind: "endSession", session: { id: session.id, userAgent: session.userAgent } };
      this.offerStepUp(answer, "ending another device's session", null, resume);
    }
  }

  async endOtherSessions() {
    this.notice("");
    this.problem("");
    const removing = $("remove-other-passkeys").checked ? this.addedElsewhere() : [];
    const query = removing.length ? "?remove_passkeys=true" : "";
    const answer = await api("DELETE", `/v1/account/sessions${query}`);
    if (answer.status === 204) {
      await this.refreshSessions();
      await this.refreshPasskeys();
      const removed = removing.length
        ? ` The passkeys those sessions added were removed: ${removing.map((p) => p.name).join(", ")}.`
        : "";
      this.notice(`You are signed out everywhere else; this device stays signed in.${removed}`, true);
    } else if (answer.status === 409) {
      this.problem(
        "Those passkeys are your account's only way to sign in, so nothing changed. Add a " +
          "passkey on this device or link a provider first.",
        `error: ${answer.body && answer.body.error}`,
        true,
      );
    } else if (!this.failed("Signing out everywhere else", answer)) {
      const resume = { kind: "endOtherSessions", removePasskeys: $("remove-other-passkeys").checked };
      this.offerStepUp(answer, "signing out everywhere else", null, resume);
    }
  }

  async unlink(provider) {
    this.notice("");
    this.problem("");
    const answer = await api("DELETE", `/v1/account/providers/${encodeURIComponent(provider)}`);
    if (answer.status === 200) {
      this.showProviders(answer.body.providers);
      // Unlinking ended the sessions signed in through that provider (but this one).
      await this.refreshSessions();
      this.notice(`${this.label(provider)} was unlinked from your account.`, true);
    } else if (answer.status === 409) {
      this.problem(
        `${this.label(provider)} is the only provider linked to your account. Link another ` +
          "provider before unlinking it, or you could never sign in again.",
        `error: ${answer.body && answer.body.error}`,
        true,
      );
    } else if (!this.failed("Unlinking", answer)) {
      // RFC 9470: the sign-in is too old for an account change; sign in again, then retry.
      this.offerStepUp(answer, `unlinking ${this.label(provider)}`, provider, { kind: "unlink", provider });
    }
  }

  async signOut() {
    this.notice("");
    this.problem("");
    const answer = await api("POST", "/v1/auth/logout");
    if (answer.status === 204) {
      remember(localStorage, SIGNED_IN, null);
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
    $("end-other-sessions").addEventListener("click", () => this.endOtherSessions());
    $("passkey-sign-in").addEventListener("click", () => this.passkeySignIn());
    $("passkey-username").addEventListener("focus", () => this.autofillPasskey());
    $("add-passkey").addEventListener("click", () => this.addPasskey());
    $("passkey-offer-add").addEventListener("click", () => this.addPasskey());
    // The callback lands on the dashboard or onboarding page with a new session; elsewhere,
    // a page that remembers no sign-in knows it is signed out and does not ask.
    const landing = page === "dashboard" || page === "onboarding";
    if (!landing && !remembered(localStorage, SIGNED_IN)) {
      $("loading").hidden = true;
      this.showSignedOut();
      return;
    }
    const account = await this.refresh();
    if (!account) {
      if (landing && $("problem").hidden) this.notice("You are not signed in.");
      return;
    }
    const primary = account.providers.find((p) => p.isPrimary);
    const back = params.get("reauthenticated") || params.get("signed_in");
    const resume = back && page !== "login" ? this.stepUp().resume : null;
    if (page === "onboarding") {
      this.notice(
        `Welcome! Your account was created with ${this.label(primary ? primary.provider : "")}.`,
      );
    } else if (params.get("linked")) {
      this.notice(`${this.label(params.get("linked"))} is now linked to your account.`);
    } else if (params.get("reauthenticated")) {
      // The window is the one the API named in its step-up challenge (max_age).
      const maxAge = this.stepUp().maxAge;
      const open = maxAge ? `for ${duration(maxAge)}` : "for a short while";
      this.notice(
        `You signed in again with ${this.label(params.get("reauthenticated"))}: account changes are open ${open}.`,
      );
    } else if (params.get("signed_in")) {
      this.notice(`You are signed in with ${this.label(params.get("signed_in"))}.`);
    }
    if (page !== "login") history.replaceState(null, "", location.pathname);
    if (page !== "login") remember(sessionStorage, STEP_UP, null);
    if (resume) {
      // Back from the step-up: the change asked for is done now, and the page says both.
      const returned = $("notice").textContent;
      await this.resume(resume);
      if (!$("notice").hidden && returned) this.notice(`${returned} ${$("notice").textContent}`, true);
    }
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
