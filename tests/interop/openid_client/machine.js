// openid-client's clientCredentialsGrant against authgate's token endpoint: machine clients
// authenticating with client_secret_basic, client_secret_post and private_key_jwt, with RFC 8707
// resource indicators (one, repeated, and one the client is not registered for).
//
// No browser and no discovery: the test serves authgate on a loopback port under another
// issuer, so the server metadata (issuer, token_endpoint) is given as is.
// Configuration by environment: ISSUER, TOKEN_ENDPOINT, RESOURCES (JSON list: two resources the
// clients are registered for, then one they are not) and CLIENTS (JSON: basic, post and jwt,
// each its client_id and secret or private JWK). Prints one JSON line: the report.
import * as client from 'openid-client'

const env = process.env
const clients = JSON.parse(env.CLIENTS)
const [first, second, unregistered] = JSON.parse(env.RESOURCES)
const server = { issuer: env.ISSUER, token_endpoint: env.TOKEN_ENDPOINT }

function configuration(client_id, auth) {
  const config = new client.Configuration(server, client_id, {}, auth)
  client.allowInsecureRequests(config) // loopback HTTP in the test
  return config
}

function claims(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString())
}

async function refused(call) {
  try {
    await call()
    return null
  } catch (e) {
    return { error: e.error ?? e.code ?? String(e), status: e.status ?? null }
  }
}

function described(tokens) {
  return {
    token_type: tokens.token_type,
    scope: tokens.scope ?? null,
    expires_in: tokens.expires_in ?? null,
    refresh_token: tokens.refresh_token ?? null,
    id_token: tokens.id_token ?? null,
    claims: claims(tokens.access_token),
  }
}

const out = {}

{
  const { client_id, secret } = clients.basic
  const config = configuration(client_id, client.ClientSecretBasic(secret))
  out.basic = described(await client.clientCredentialsGrant(config, { scope: 'mcp:tools', resource: first }))
  const both = new URLSearchParams([['resource', first], ['resource', second]])
  out.basicBoth = described(await client.clientCredentialsGrant(config, both))
  out.basicUnregistered = await refused(() => client.clientCredentialsGrant(config, { resource: unregistered }))
  out.basicPersonScope = await refused(() => client.clientCredentialsGrant(config, { scope: 'openid' }))
}
{
  const { client_id, secret } = clients.post
  const config = configuration(client_id, client.ClientSecretPost(secret))
  out.post = described(await client.clientCredentialsGrant(config))
}
{
  const { client_id, jwk } = clients.jwt
  const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  const config = configuration(client_id, client.PrivateKeyJwt({ key, kid: jwk.kid }))
  out.jwt = described(await client.clientCredentialsGrant(config, { resource: first }))
}

console.log(JSON.stringify({ done: out }))
