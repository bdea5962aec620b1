// openid-client's device authorization grant (RFC 8628) against authgate's OpenID Provider, as
// a command-line tool uses it: discovery (device_authorization_endpoint), the device request,
// then pollDeviceAuthorizationGrant (the library waits the interval, keeps polling through
// authorization_pending and slow_down, and validates the ID token) while the person approves
// on authgate's verification page; a second request the person denies.
//
// The person is played by the Python test: for each request the script prints {"device":
// {...}} (the code and the page's address) and polls at once; the test's browser opens the page
// and answers. The report is the last line, {"done": {...}}.
// Configuration by environment: ISSUER, CLIENT_ID (a public client).
import * as client from 'openid-client'
import { say } from './browser.js'

const env = process.env

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
  client.None(),
  { execute: [client.allowInsecureRequests] }, // loopback HTTP in the test
)
const out = { endpoint: config.serverMetadata().device_authorization_endpoint ?? null }

const asked = await client.initiateDeviceAuthorization(config, { scope: 'openid profile offline_access' })
out.request = {
  userCode: asked.user_code,
  verificationUri: asked.verification_uri,
  expiresIn: asked.expires_in,
  interval: asked.interval,
}
say({ device: { complete: asked.verification_uri_complete, decision: 'approve' } })
const tokens = await client.pollDeviceAuthorizationGrant(config, asked)
const claims = tokens.claims()
out.approved = {
  sub: claims.sub,
  aud: claims.aud,
  sid: claims.sid,
  scope: tokens.scope,
  tokenType: tokens.token_type,
  hasRefreshToken: typeof tokens.refresh_token === 'string',
}
out.userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token)
out.refreshedSub = refreshed.claims()?.sub ?? null

const second = await client.initiateDeviceAuthorization(config, { scope: 'openid' })
say({ device: { complete: second.verification_uri_complete, decision: 'deny' } })
out.denied = await refused(() => client.pollDeviceAuthorizationGrant(config, second))
say({ done: out })
process.exit(0)
