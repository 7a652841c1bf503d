// A real OAuth 2.1 authorization server for the harness: oidc-provider (package.json, pinned) on
// loopback, issuing JWT access tokens for whatever resource (RFC 8707) a client names.
//
//   node provider.mjs --port PORT --jwks FILE      (or $PROVIDER_PORT, $PROVIDER_JWKS)
//
// FILE is a JWKS of private keys, one RSA (RS256) and one P-256 EC (ES256), each with a `kid`. The
// test makes it (nothing private is committed); a second start on the same port with another file
// is a key rotation. The issuer is http://127.0.0.1:PORT.
//
// What it offers, beyond the discovery documents (RFC 8414 and OpenID) and the JWKS:
//   - dynamic client registration (open, as the MCP SDK's OAuth client uses it), PKCE required for
//     every authorization code;
//   - client_credentials for two static confidential clients, `cc-rs256` and `cc-es256` (secret
//     `cc-secret`), whose access tokens are signed RS256 and ES256 respectively; any other client's
//     are RS256;
//   - every absolute URI is a known resource: its access tokens are JWTs with `aud` = that resource
//     and `scope` = what was asked of `callosum:read callosum:write`;
//   - login and consent with no UI: the interaction URL signs in the fixed account `tester` and
//     grants what was asked, then redirects back, so following the authorization URL's redirects
//     ends at the client's redirect_uri with ?code=;
//   - `GET /__stats` answers {"jwks_fetches": N} (requests to the JWKS endpoint since start), and
//     each such request prints `jwks-fetch N` on stdout.
// Prints `listening http://127.0.0.1:PORT` once ready. Stops on SIGTERM / SIGINT.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.PROVIDER_PORT },
    jwks: { type: 'string', default: process.env.PROVIDER_JWKS },
  },
});
if (!args.port || !args.jwks) {
  console.error('usage: node provider.mjs --port PORT --jwks FILE');
  process.exit(2);
}
const port = Number(args.port);
const issuer = `http://127.0.0.1:${port}`;
const jwks = JSON.parse(readFileSync(args.jwks, 'utf8'));

// callosum:view:facts selects a view on the callosum that has one (contract §6c).
const SCOPES = ['callosum:read', 'callosum:write', 'callosum:view:facts'];
const STATIC_SECRET = 'cc-secret';
const ACCOUNT = 'tester';

const provider = new Provider(issuer, {
  jwks,
  clients: [
    ...['cc-rs256', 'cc-es256'].map((id) => ({
      client_id: id,
      client_secret: STATIC_SECRET,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    })),
  ],
  scopes: ['openid', 'offline_access', ...SCOPES],
  claims: { openid: ['sub'] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  // Random each start: no session outlives a restart, and nothing here is a secret worth keeping.
  cookies: { keys: [crypto.randomUUID()] },
  pkce: { required: () => true },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // No default: a token without `resource` is not for the callosum.
      defaultResource: async (_ctx, _client, oneOf) => (oneOf ? oneOf[0] : undefined),
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource, client) => ({
        scope: SCOPES.join(' '),
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 3600,
        jwt: { sign: { alg: client?.clientId === 'cc-es256' ? 'ES256' : 'RS256' } },
      }),
    },
  },
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    ClientCredentials: 3600,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    RefreshToken: 3600,
    Session: 3600,
  },
  // Plain OAuth clients: a refresh token whenever the client may use the grant.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
});

// Login, then consent, each finished at once; the browser (the test's httpx) follows the 303s.
async function interaction(req, res) {
  const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT } },
      { mergeWithLastSubmission: false });
    return;
  }
  if (prompt.name !== 'consent') throw new Error(`unexpected prompt ${prompt.name}`);
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const { details } = prompt;
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [resource, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(resource, scopes.join(' '));
  }
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } },
    { mergeWithLastSubmission: true });
}

let jwksFetches = 0;
const callback = provider.callback();
const server = http.createServer(async (req, res) => {
  const path = new URL(req.url, issuer).pathname;
  try {
    if (path === '/__stats') {
      const body = JSON.stringify({ jwks_fetches: jwksFetches });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    if (path.startsWith('/interaction/')) {
      await interaction(req, res);
      return;
    }
    if (path === '/jwks') {
      jwksFetches += 1;
      console.log(`jwks-fetch ${jwksFetches}`);
    }
    callback(req, res);
  } catch (err) {
    console.error(`provider: ${req.method} ${path}: ${err.stack || err}`);
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain' });
    }
    res.end(String(err.message || err));
  }
});

provider.on('server_error', (_ctx, err) => console.error(`provider: server_error: ${err.stack || err}`));
for (const event of ['grant.error', 'authorization.error', 'registration_create.error']) {
  provider.on(event, (_ctx, err) => console.error(`provider: ${event}: ${err.name}: ${err.error_description || err.message}`));
}

server.listen(port, '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
