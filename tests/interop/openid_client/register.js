// openid-client registers itself with authgate (RFC 7591: discovery's registration_endpoint,
// an initial access token) as an MCP client does (a public client: token_endpoint_auth_method
// none, PKCE), then signs a person in with the client it was given, refreshes, and tries the
// spent initial access token again.
//
// Configuration by environment: ISSUER, REDIRECT_URI, INITIAL_TOKEN. The browser is the Python
// test (browser.js); the report is the last line, {"done": {...}}.
import * as client from 'openid-client'
import { authorize, say } from './browser.js'

const env = process.env
const insecure = { execute: [client.allowInsecureRequests] } // loopback HTTP in the test
const metadata = {
  client_name: 'openid-client registered app',
  redirect_uris: [env.REDIRECT_URI],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  scope: 'openid email offline_access',
}
const config = await client.dynamicClientRegistration(new URL(env.ISSUER), metadata, client.None(), {
  ...insecure,
  initialAccessToken: env.INITIAL_TOKEN,
})
const registered = config.clientMetadata()
const out = {
  registrationEndpoint: config.serverMetadata().registration_endpoint,
  clientId: registered.client_id,
  hasSecret: 'client_secret' in registered,
  hasRegistrationToken: typeof registered.registration_access_token === 'string',
  registrationClientUri: registered.registration_client_uri,
  method: registered.token_endpoint_auth_method,
}
const first = await authorize(config, env.REDIRECT_URI, 'openid email offline_access')
const claims = first.tokens.claims()
out.idToken = { aud: claims.aud, matchesNonce: claims.nonce === first.nonce }
out.hasRefreshToken = typeof first.tokens.refresh_token === 'string'
const refreshed = await client.refreshTokenGrant(config, first.tokens.refresh_token)
out.refreshed = typeof refreshed.access_token === 'string'
try {
  await client.dynamicClientRegistration(new URL(env.ISSUER), metadata, client.None(), {
    ...insecure,
    initialAccessToken: env.INITIAL_TOKEN,
  })
  out.secondRegistration = 'registered'
} catch (e) {
  out.secondRegistration = { status: e.status ?? e.cause?.status ?? null, error: e.error ?? e.cause?.error ?? e.code ?? String(e) }
}
say({ done: out })
