// oidc-provider (the certified OpenID provider from the npm registry) on loopback, for
// bench/openid_peer_bench.py: the peer of `authgate serve`'s OpenID Provider face.
//
//   node server.js   with the environment:
//     OP_PORT        the loopback port (the issuer is http://127.0.0.1:OP_PORT)
//     OP_STORE       "map" (adapters.js's MapAdapter) or "postgres" (its PgAdapter)
//     DATABASE_URL   the PostgreSQL database (OP_STORE=postgres); tables made if missing
//     POOL_MAX       pg's pool size (default 10, authgate's database.pool_max_size default)
//     WEB_SECRET, INTROSPECTOR_SECRET, SERVICE_SECRET   the three clients' secrets
//     REDIRECT_URI   the web client's redirect URI
//     RESOURCE       the resource indicator of the API whose access tokens are JWTs
//
// Clients: `web` (confidential, client_secret_basic, code + refresh_token), `rs` (confidential,
// may only introspect), `svc` (confidential, client_secret_basic, client credentials only). RS256 with a fresh 2048-bit key for ID tokens and JWT access tokens.
// Access tokens are opaque (oidc-provider's default: stored, looked up by userinfo and
// introspection) unless the request names RESOURCE (features.resourceIndicators): then an RFC
// 9068 JWT (accessTokenFormat 'jwt', not stored), like authgate's. Refresh tokens rotate at every
// use (rotateRefreshToken: true), as authgate's do. Sign-in and consent go through
// oidc-provider's development pages (devInteractions), which the bench crosses once per browser.
//
// Standard output: {"event": "ready", ...} once listening; "server_error" lines on failures.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import process from 'node:process';

import Provider from 'oidc-provider';

import { MapAdapter, PgAdapter, closePg, openPg } from './adapters.js';

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`server.js: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

const port = Number(required('OP_PORT'));
const store = required('OP_STORE');
const issuer = `http://127.0.0.1:${port}`;
const resource = required('RESOURCE');

let adapter;
if (store === 'map') {
  adapter = MapAdapter;
} else if (store === 'postgres') {
  await openPg(required('DATABASE_URL'), Number(process.env.POOL_MAX || 10));
  adapter = PgAdapter;
} else {
  console.error(`server.js: OP_STORE must be map or postgres, not ${store}`);
  process.exit(2);
}

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }), kid: `bench-${port}`, use: 'sig', alg: 'RS256',
};

function emit(event, fields = {}) {
  process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
}

const configuration = {
  adapter,
  clients: [
    {
      client_id: 'web',
      client_secret: required('WEB_SECRET'),
      redirect_uris: [required('REDIRECT_URI')],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    },
    {
      client_id: 'svc',
      client_secret: required('SERVICE_SECRET'),
      redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
    {
      client_id: 'rs',
      client_secret: required('INTROSPECTOR_SECRET'),
      redirect_uris: [],
      grant_types: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  scopes: ['openid', 'offline_access', 'api'],
  features: {
    devInteractions: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined, // opaque, userinfo-only tokens unless asked
      useGrantedResource: () => true,
      getResourceServerInfo(ctx, indicator) {
        if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
        return {
          scope: 'api',
          audience: resource,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  pkce: { required: () => true },
  rotateRefreshToken: true,
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return { sub, email: `${sub}@example.com`, email_verified: true, name: 'Bench' };
      },
    };
  },
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (ctx, err) => {
  emit('server_error', { error: String(err?.stack ?? err) });
});

const server = provider.listen(port, '127.0.0.1', () => emit('ready', { issuer, store }));

function stop() {
  server.close(() => Promise.resolve(closePg()).finally(() => process.exit(0)));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
