// openid-client (the OpenID Certified relying-party library) as an application uses it against
// authgate's OpenID Provider: discovery, authorization code + PKCE (S256) with state and nonce,
// the token exchange (the library validates the ID token: signature by the published keys, iss,
// aud, exp, iat, nonce, at_hash; and the RFC 9207 iss of the authorization response), userinfo,
// refresh, introspection, revocation and the RP-initiated logout URL.
//
// The browser is played by the Python test driving this script (browser.js). Everything the
// test asserts on is in the last line, {"done": {...}}.
// Configuration by environment: ISSUER, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, LOGOUT_URI.
import * as client from 'openid-client'
import { authorize, say } from './browser.js'

const env = process.env

// What the provider answered to a call the application expects to be refused.
async function refused(call) {
  try {
    await call()
    return null
  } catch (e) {
    return { error: e.error ?? e.code ?? String(e), status: e.status ?? null }
  }
}

const config = await client.discovery(
  new URL(env.ISSUER),
  env.CLIENT_ID,
  undefined,
  client.ClientSecretBasic(env.CLIENT_SECRET),
  { execute: [client.allowInsecureRequests] }, // loopback HTTP in the test
)
const metadata = config.serverMetadata()

function signIn(scope, extra = {}) {
  return authorize(config, env.REDIRECT_URI, scope, extra)
}

const out = { issuer: metadata.issuer }
// prompt=none before the person has signed in: the library reads the error response (and
// checks its state and RFC 9207 iss) and reports login_required
out.promptNone = await refused(() => signIn('openid', { prompt: 'none' }))
const first = await signIn('openid email profile offline_access')
const claims = first.tokens.claims()
out.idToken = { sub: claims.sub, aud: claims.aud, nonce: claims.nonce, sid: claims.sid, matchesNonce: claims.nonce === first.nonce }
out.tokenType = first.tokens.token_type
out.scope = first.tokens.scope
out.hasRefreshToken = typeof first.tokens.refresh_token === 'string'
out.userinfo = await client.fetchUserInfo(config, first.tokens.access_token, claims.sub)

// refresh with rotation: a new refresh token; the replaced one refused afterwards
const second = await client.refreshTokenGrant(config, first.tokens.refresh_token)
out.rotated = second.refresh_token !== first.tokens.refresh_token && typeof second.refresh_token === 'string'
out.refreshedIdTokenSub = second.claims()?.sub ?? null
out.introspectRefreshed = await client.tokenIntrospection(config, second.access_token)
out.replacedRefused = await refused(() => client.refreshTokenGrant(config, first.tokens.refresh_token))
// presenting the replaced token revoked the whole family (RFC 9700 4.14)
out.introspectAfterReuse = await client.tokenIntrospection(config, second.access_token)
out.rotatedRefusedAfterReuse = await refused(() => client.refreshTokenGrant(config, second.refresh_token))

// a second authorization in the same browser (single sign-on), then revocation
const third = await signIn('openid offline_access')
out.ssoSameSub = third.tokens.claims().sub === claims.sub
out.introspectBeforeRevocation = await client.tokenIntrospection(config, third.tokens.access_token)
await client.tokenRevocation(config, third.tokens.refresh_token, { token_type_hint: 'refresh_token' })
out.introspectAfterRevocation = await client.tokenIntrospection(config, third.tokens.access_token)
out.revokedRefused = await refused(() => client.refreshTokenGrant(config, third.tokens.refresh_token))
out.userinfoAfterRevocation = await refused(() => client.fetchUserInfo(config, third.tokens.access_token, claims.sub))

// RP-initiated logout: the URL the library builds (the test's browser follows it)
out.logoutState = client.randomState()
out.endSessionUrl = client.buildEndSessionUrl(config, {
  id_token_hint: third.tokens.id_token,
  post_logout_redirect_uri: env.LOGOUT_URI,
  state: out.logoutState,
}).href
say({ done: out })
process.exit(0)
