// What rp.js and flows.js share: the browser, played by the Python test across stdin and
// stdout, and the authorization code flow (PKCE S256, state and nonce) through it.
//
// For each authorization a script prints {"authorize": URL, "label": ...} on a line and reads
// back one line: the URL the browser was sent back to, or {"form_post": {"action": ...,
// "fields": {...}}} for a form the browser posted. The report is the last line, {"done": {...}}.
import * as client from 'openid-client'
import * as readline from 'node:readline'

const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()

export const say = (value) => process.stdout.write(JSON.stringify(value) + '\n')

export async function browse(url, label) {
  say({ authorize: url.href, label })
  const { value, done } = await lines.next()
  if (done) throw new Error('the test closed stdin before the browser came back')
  const text = value.trim()
  if (!text.startsWith('{')) return new URL(text)
  // the browser posted authgate's form_post page to the application: the request it made
  const { action, fields } = JSON.parse(text).form_post
  return new Request(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
}

// An authorization as the library builds it, the browser through it (label tells the test
// which), the code redeemed: the tokens, the nonce sent, the request's URL and what came back.
export async function authorize(config, redirectUri, scope, extra = {}, label = undefined) {
  const verifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  })
  const back = await browse(url, label)
  const tokens = await client.authorizationCodeGrant(config, back, {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  })
  return { tokens, nonce, url, back }
}
