// oidc-provider (the certified OpenID provider from the npm registry) on loopback, for
// tests/interop: one confidential client, authgate, with back-channel logout.
//
//   node server.js   with the environment:
//     OP_PORT            the loopback port to listen on (the issuer is http://127.0.0.1:OP_PORT)
//     AUTHGATE_URL       authgate's base address, e.g. http://127.0.0.1:8080
//     PROVIDER_NAME      authgate's name for this provider (default oidcdemo)
//     CLIENT_ID, CLIENT_SECRET   the client's credentials
//     BACKCHANNEL_LOGOUT_URI     default AUTHGATE_URL/v1/providers/PROVIDER_NAME/backchannel-logout
//
// Sign-in goes through oidc-provider's own development pages (devInteractions): any login and
// password sign in as the account named by the login, then a consent page. Accounts have the
// claims sub, email (LOGIN@interop.example, verified) and name.
//
// Standard output carries one JSON line per event the test reads: {"event": "ready"} once
// listening, "grant.success" (with the session id, sid, that the ID token carries),
// "backchannel.sent" (a logout token as sent, for replay tests), "backchannel.success" /
// "backchannel.error" (authgate answered it 200/204, or not). No code or access token is printed.

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import process from 'node:process';

import Provider from 'oidc-provider';

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`server.js: ${name} is not set`);
    process.exit(2);
  }
  return value;
}

const port = Number(required('OP_PORT'));
const authgate = required('AUTHGATE_URL').replace(/\/$/, '');
const name = process.env.PROVIDER_NAME || 'oidcdemo';
const clientId = required('CLIENT_ID');
const clientSecret = required('CLIENT_SECRET');
const backchannelLogoutUri = process.env.BACKCHANNEL_LOGOUT_URI
  || `${authgate}/v1/providers/${name}/backchannel-logout`;
const issuer = `http://127.0.0.1:${port}`;

// A fresh signing key each run (never oidc-provider's built-in development key).
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = {
  ...privateKey.export({ format: 'jwk' }), kid: `interop-${port}`, use: 'sig', alg: 'RS256',
};

function emit(event, fields = {}) {
  process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
}

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [`${authgate}/v1/auth/${name}/callback`],
    post_logout_redirect_uris: [`${authgate}/`],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
    id_token_signed_response_alg: 'RS256',
    backchannel_logout_uri: backchannelLogoutUri,
    backchannel_logout_session_required: true,
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  features: {
    devInteractions: { enabled: true },
    backchannelLogout: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  pkce: { required: () => true },
  async findAccount(ctx, sub) {
    return {
      accountId: sub,
      async claims() {
        return {
          sub, email: `${sub}@interop.example`, email_verified: true, name: `Interop ${sub}`,
        };
      },
    };
  },
  // oidc-provider refuses outgoing requests to special-use addresses (its SSRF guard), and
  // loopback is one; here authgate's back-channel receiver is on loopback on purpose.
  // The only outgoing requests are back-channel logouts: each logout token is also printed
  // ("backchannel.sent"), so that a test can replay the provider's real token.
  fetch(url, options) {
    const { dispatcher, ...rest } = options;
    if (rest.body instanceof URLSearchParams && rest.body.has('logout_token')) {
      emit('backchannel.sent', { url: String(url), logout_token: rest.body.get('logout_token') });
    }
    return globalThis.fetch(url, rest);
  },
};

const provider = new Provider(issuer, configuration);

provider.on('grant.success', (ctx) => {
  const code = ctx.oidc.entities.AuthorizationCode;
  emit('grant.success', { account: code?.accountId, sid: code?.sid });
});
provider.on('backchannel.success', (ctx, client, accountId, sid) => {
  emit('backchannel.success', { client: client.clientId, account: accountId, sid });
});
provider.on('backchannel.error', (ctx, err, client, accountId, sid) => {
  emit('backchannel.error', {
    client: client.clientId, account: accountId, sid, error: String(err?.message ?? err),
  });
});
provider.on('server_error', (ctx, err) => {
  emit('server_error', { error: String(err?.stack ?? err) });
});

const server = provider.listen(port, '127.0.0.1', () => emit('ready', { issuer }));

function stop() {
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
