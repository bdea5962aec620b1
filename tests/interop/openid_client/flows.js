// openid-client against authgate's OpenID Provider, as applications configured otherwise than
// rp.js's use it: a third-party application authenticating with client_secret_post (the person
// approves authgate's consent page), a public application (token_endpoint_auth_method none,
// PKCE alone) with refresh, response_mode=form_post (the library reads the form the browser
// posted, as a Request), an application registered with id_token_signed_response_alg ES256
// whose ID token the library verifies by the key set discovery names (non-repudiation checks
// on: the signature is checked, not only the claims), and private_key_jwt.
//
// The same browser as rp.js (browser.js).
// Configuration by environment: ISSUER, REDIRECT_URI and CLIENTS (JSON: for each scenario its
// client_id and, as it needs, secret or private JWK).
import * as client from 'openid-client'
import { authorize, say } from './browser.js'

const env = process.env
const clients = JSON.parse(env.CLIENTS)
const insecure = { execute: [client.allowInsecureRequests] } // loopback HTTP in the test

async function refused(call) {
  try {
    await call()
    return null
  } catch (e) {
    const cause = e.cause instanceof Error ? e.cause : null
    return { error: e.error ?? e.code ?? String(e), status: e.status ?? null, message: e.message ?? null, cause: cause ? `${cause.code ?? ""} ${cause.message}` : null }
  }
}

async function signIn(config, label, scope, extra = {}) {
  const { tokens, url, back } = await authorize(config, env.REDIRECT_URI, scope, extra, label)
  const claims = tokens.claims()
  return { tokens, claims, sent: Object.fromEntries(url.searchParams), formPost: back instanceof Request }
}

function header(jwt) {
  return JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString())
}

const issuer = new URL(env.ISSUER)
const out = {}

// 1. a third-party application with client_secret_post: sign-in and consent, then refresh
{
  const { client_id, secret } = clients.post
  const config = await client.discovery(issuer, client_id, undefined, client.ClientSecretPost(secret), insecure)
  const first = await signIn(config, 'post', 'openid email offline_access')
  const second = await client.refreshTokenGrant(config, first.tokens.refresh_token)
  out.post = {
    sub: first.claims.sub,
    aud: first.claims.aud,
    scope: first.tokens.scope,
    rotated: typeof second.refresh_token === 'string' && second.refresh_token !== first.tokens.refresh_token,
    userinfoEmail: (await client.fetchUserInfo(config, second.access_token, first.claims.sub)).email,
    introspected: await client.tokenIntrospection(config, second.access_token),
    replacedRefused: await refused(() => client.refreshTokenGrant(config, first.tokens.refresh_token)),
  }
  // the same scopes again: consent was given, so no page this time
  // a wider request asks again; the person denies it: the library reads access_denied (and
  // checks the error response's state and RFC 9207 iss)
  out.post.denied = await refused(() => signIn(config, 'post-denied', 'openid email profile'))
  const again = await signIn(config, 'post-again', 'openid email offline_access')
  await client.tokenRevocation(config, again.tokens.refresh_token)
  out.post.revokedRefused = await refused(() => client.refreshTokenGrant(config, again.tokens.refresh_token))
}

// 2. a public application: no secret, PKCE alone; refresh with rotation, and revocation
{
  const { client_id } = clients.public
  const config = await client.discovery(issuer, client_id, undefined, client.None(), insecure)
  const first = await signIn(config, 'public', 'openid profile offline_access')
  const second = await client.refreshTokenGrant(config, first.tokens.refresh_token)
  const third = await client.refreshTokenGrant(config, second.refresh_token)
  out.public = {
    sub: first.claims.sub,
    aud: first.claims.aud,
    rotated: second.refresh_token !== first.tokens.refresh_token && third.refresh_token !== second.refresh_token,
    refreshedSub: third.claims()?.sub ?? null,
    userinfoName: (await client.fetchUserInfo(config, third.access_token, first.claims.sub)).name,
    replacedRefused: await refused(() => client.refreshTokenGrant(config, second.refresh_token)),
    afterReuse: await refused(() => client.refreshTokenGrant(config, third.refresh_token)),
  }
  const fresh = await signIn(config, 'public-again', 'openid offline_access')
  await client.tokenRevocation(config, fresh.tokens.refresh_token, { token_type_hint: 'refresh_token' })
  out.public.revokedRefused = await refused(() => client.refreshTokenGrant(config, fresh.tokens.refresh_token))
}

// 3. response_mode=form_post, the ID token's signature checked too (RS256 by default)
{
  const { client_id, secret } = clients.formPost
  const config = await client.discovery(issuer, client_id, undefined, client.ClientSecretBasic(secret), {
    execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks],
  })
  const posted = await signIn(config, 'form_post', 'openid email', { response_mode: 'form_post' })
  out.formPost = {
    formPost: posted.formPost,
    sent: posted.sent.response_mode,
    sub: posted.claims.sub,
    alg: header(posted.tokens.id_token).alg,
  }
}

// 4. an application registered with id_token_signed_response_alg ES256: the library expects
// ES256 and verifies the signature by the key set discovery names; told to expect RS256, it
// refuses the ES256 ID token (so the algorithm was checked, not taken from the header)
{
  const { client_id, secret } = clients.es256
  const config = await client.discovery(
    issuer,
    client_id,
    { client_secret: secret, id_token_signed_response_alg: 'ES256' },
    client.ClientSecretBasic(secret),
    { execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks] },
  )
  const signed = await signIn(config, 'es256', 'openid email')
  const expectingRs256 = await client.discovery(
    issuer,
    client_id,
    { client_secret: secret, id_token_signed_response_alg: 'RS256' },
    client.ClientSecretBasic(secret),
    { execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks] },
  )
  out.es256 = {
    alg: header(signed.tokens.id_token).alg,
    kid: header(signed.tokens.id_token).kid ?? null,
    sub: signed.claims.sub,
    aud: signed.claims.aud,
    expectingRs256: await refused(() => signIn(expectingRs256, 'es256-rs256', 'openid')),
  }
}

// 5. private_key_jwt: the client's key (its public half registered inline at authgate)
{
  const { client_id, jwk } = clients.privateKeyJwt
  const key = await crypto.subtle.importKey(
    'jwk',
    jwk,
    { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    false,
    ['sign'],
  )
  const config = await client.discovery(
    issuer,
    client_id,
    undefined,
    client.PrivateKeyJwt({ key, kid: jwk.kid }),
    insecure,
  )
  const first = await signIn(config, 'private_key_jwt', 'openid offline_access')
  const second = await client.refreshTokenGrant(config, first.tokens.refresh_token)
  out.privateKeyJwt = {
    sub: first.claims.sub,
    rotated: second.refresh_token !== first.tokens.refresh_token,
    introspected: await client.tokenIntrospection(config, second.access_token),
  }
  await client.tokenRevocation(config, second.access_token, { token_type_hint: 'access_token' })
  out.privateKeyJwt.afterRevocation = await client.tokenIntrospection(config, second.access_token)
}

say({ done: out })
process.exit(0)
