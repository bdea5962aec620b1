"use strict";

// The demo's second application: an OpenID Connect relying party in one script, a public
// client of authgate. It signs in with the authorization code flow and PKCE, redeems the code
// with fetch at the token endpoint, keeps the tokens in this tab's sessionStorage only, and
// asks the userinfo endpoint whether its sign-in is still live every time it is shown.

const TOKENS = "authgate-demo-app:tokens";
const PENDING = "authgate-demo-app:pending";

const $ = (id) => document.getElementById(id);

function base64url(bytes) {
  let text = "";
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function challengeOf(verifier) {
  return base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
}

// The payload of a JWT, for display; the token came straight from the token endpoint over
// this origin's connection, so it is shown, not verified (a server would verify it).
function claimsOf(jwt) {
  const part = jwt.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  const text = atob(part + "=".repeat((4 - (part.length % 4)) % 4));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(text, (c) => c.charCodeAt(0))));
}

function load(key) {
  try {
    return JSON.parse(sessionStorage.getItem(key) || "null");
  } catch (_) {
    return null;
  }
}

function store(key, value) {
  if (value === null) sessionStorage.removeItem(key);
  else sessionStorage.setItem(key, JSON.stringify(value));
}

class App {
  constructor(config, discovery) {
    this.config = config;
    this.op = discovery;
  }

  notice(text) {
    $("notice").textContent = text;
    $("notice").hidden = !text;
  }

  // ``kind``: "problem" (red, an alert) or "neutral" (a sign-out, not an error).
  problem(text, codes = "", heading = "That did not work", kind = "problem") {
    $("problem").className = `message ${kind}`;
    $("problem").setAttribute("role", kind === "problem" ? "alert" : "status");
    $("problem").hidden = !text;
    $("problem-heading").textContent = heading;
    $("problem-text").textContent = text || "";
    $("problem-codes").textContent = codes;
  }

  showSignedOut() {
    $("title").textContent = "Demo application";
    $("app-signed-in").hidden = true;
    $("app-signed-out").hidden = false;
  }

  showSignedIn(claims, userinfo) {
    $("title").textContent = `Demo application: hello, ${userinfo.name || userinfo.sub}`;
    $("app-signed-out").hidden = true;
    $("app-signed-in").hidden = false;
    $("app-name").textContent = userinfo.name || "—";
    $("app-email").textContent = userinfo.email || "—";
    $("app-sub").textContent = claims.sub;
    $("app-sid").textContent = claims.sid || "—";
    $("id-token-claims").textContent = JSON.stringify(claims, null, 2);
    $("userinfo").textContent = JSON.stringify(userinfo, null, 2);
  }

  async signIn() {
    const pending = { state: random(), nonce: random(), verifier: random() };
    store(PENDING, pending);
    const query = new URLSearchParams({
      response_type: "code",
      client_id: this.config.clientId,
      redirect_uri: this.config.redirectUri,
      scope: this.config.scope,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await challengeOf(pending.verifier),
      code_challenge_method: "S256",
    });
    location.assign(`${this.op.authorization_endpoint}?${query}`);
  }

  // The authorization response: check state, redeem the code with the PKCE verifier.
  async callback(params) {
    const pending = load(PENDING);
    store(PENDING, null);
    history.replaceState(null, "", this.config.home);
    if (!pending || params.get("state") !== pending.state) {
      this.problem("This answer was not for a sign-in this tab started.", "error: state mismatch");
      return;
    }
    if (params.get("iss") !== this.op.issuer) {
      this.problem("The answer came from another issuer.", `iss: ${params.get("iss")}`);
      return;
    }
    if (params.get("error")) {
      this.problem(
        params.get("error") === "access_denied"
          ? "You did not allow the application to use your account."
          : "The sign-in did not complete.",
        `error: ${params.get("error")}`,
      );
      return;
    }
    const response = await fetch(this.op.token_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: params.get("code") || "",
        redirect_uri: this.config.redirectUri,
        client_id: this.config.clientId,
        code_verifier: pending.verifier,
      }),
    });
    const body = await response.json();
    if (response.status !== 200) {
      this.problem("The code could not be redeemed.", `error: ${body.error}`);
      return;
    }
    const claims = claimsOf(body.id_token);
    if (claims.nonce !== pending.nonce || claims.aud !== this.config.clientId) {
      this.problem("The ID token was not for this sign-in.", "error: nonce or audience");
      return;
    }
    store(TOKENS, { accessToken: body.access_token, idToken: body.id_token });
    this.notice("You are signed in through authgate.");
  }

  // Whether the sign-in is still live: the userinfo endpoint answers only while the authgate
  // session, the grant and the account all are.
  async check() {
    const tokens = load(TOKENS);
    if (!tokens) {
      this.showSignedOut();
      return;
    }
    const response = await fetch(this.op.userinfo_endpoint, {
      headers: { Authorization: `Bearer ${tokens.accessToken}`, Accept: "application/json" },
    });
    if (response.status === 200) {
      this.showSignedIn(claimsOf(tokens.idToken), await response.json());
      return;
    }
    store(TOKENS, null);
    this.showSignedOut();
    this.notice("");
    // Access tokens live minutes; this demo keeps no refresh token (it asks for no
    // offline_access), so an expired one means signing in again: one click while the
    // authgate session lives (single sign-on).
    const expired = claimsOf(tokens.accessToken).exp * 1000 <= Date.now();
    this.problem(
      expired
        ? "The application's access token expired. Sign in again: while your authgate " +
            "session lives, no provider is asked."
        : response.status === 401
        ? "Your sign-in ended: you signed out of authgate, or its session was ended, or the " +
            "application's access was withdrawn or expired. Sign in again."
        : `authgate could not confirm the sign-in (HTTP ${response.status}). Sign in again.`,
      `userinfo: HTTP ${response.status}`,
      "You are signed out",
      expired || response.status === 401 ? "neutral" : "problem",
    );
  }

  // RP-initiated logout: authgate ends its session (the hint names it) and sends the browser
  // back to the registered post-logout address with the state.
  signOut() {
    const tokens = load(TOKENS);
    const state = random();
    store(PENDING, { logoutState: state });
    const query = new URLSearchParams({
      id_token_hint: tokens ? tokens.idToken : "",
      client_id: this.config.clientId,
      post_logout_redirect_uri: this.config.postLogoutRedirectUri,
      state,
    });
    store(TOKENS, null);
    location.assign(`${this.op.end_session_endpoint}?${query}`);
  }

  async start() {
    $("client-id").textContent = this.config.clientId;
    $("app-sign-in").addEventListener("click", () => this.signIn());
    $("app-sign-out").addEventListener("click", () => this.signOut());
    const params = new URLSearchParams(location.search);
    if (location.pathname === this.config.callbackPath) {
      await this.callback(params);
    } else if (params.get("state")) {
      const pending = load(PENDING);
      store(PENDING, null);
      history.replaceState(null, "", this.config.home);
      if (pending && pending.logoutState === params.get("state")) {
        this.notice("You are signed out of the application and of authgate.");
      }
    }
    $("loading").hidden = true;
    await this.check();
  }
}

async function main() {
  try {
    const config = await (await fetch("/demo/app/config.json")).json();
    const discovery = await (await fetch("/.well-known/openid-configuration")).json();
    await new App(config, discovery).start();
  } catch (e) {
    $("loading").textContent = `The application could not start: ${e}`;
  }
}

main();
