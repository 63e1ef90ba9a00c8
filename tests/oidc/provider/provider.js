// A real OpenID Connect provider for tests/oidc: panva's oidc-provider (OpenID Certified),
// on 127.0.0.1 at the port given as the first argument.
//
// Clients register themselves through Dynamic Client Registration (POST /reg), so each test
// application registers its own redirect URI. Signing in is a small HTML form at
// /interaction/<uid> (username only: these accounts are test fixtures) that a test posts to
// over HTTP or fills in with a browser; it grants the scopes the client asked for.
//
// LABAPP_OIDC_CLOCK_OFFSET_SECONDS shifts this provider's clock (negative: behind), so the
// tokens it issues are already expired for a relying party with a correct clock.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const offsetMilliseconds = Number(process.env.LABAPP_OIDC_CLOCK_OFFSET_SECONDS || '0') * 1000;
if (offsetMilliseconds) {
  const realNow = Date.now;
  Date.now = () => realNow() + offsetMilliseconds;
}
const issuer = `http://127.0.0.1:${port}`;

// The accounts: sub is the provider's own stable id, never the username.
const ACCOUNTS = {
  alice: {
    sub: 'a1b2c3-alice', preferred_username: 'alice', name: 'Alice Anders',
    email: 'alice@example.org', email_verified: true, department: 'chemistry',
    groups: ['lab-managers', 'staff'],
  },
  bob: {
    sub: 'b2c3d4-bob', preferred_username: 'bob', name: 'Bob Berg', email: 'bob@example.org',
    email_verified: true, department: 'unknown-unit', groups: ['staff'],
  },
  // Claims the username of the application's local administrator.
  mallory: {
    sub: 'c3d4e5-mallory', preferred_username: 'admin', name: 'Mallory', groups: [],
  },
  // Markup in every text claim: it must be shown as text.
  eve: {
    sub: 'e5f6a7-eve', preferred_username: 'eve', name: '<img src=x onerror=alert(1)>Eve',
    email: '"><script>alert(2)</script>@example.org', department: ['<b>x</b>', 'chemistry'],
    groups: 'lab-managers',
  },
  // A username the application cannot hold.
  odd: { sub: 'd4e5f6-odd', preferred_username: 'no spaces allowed', name: 'Odd' },
};
const SUBJECTS = Object.fromEntries(
  Object.entries(ACCOUNTS).map(([, claims]) => [claims.sub, claims]));

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'tests-1', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  // Claims of the scopes the client asked for go into the ID token (as Entra ID and Keycloak
  // put them there), not only to the userinfo endpoint.
  conformIdTokenClaims: false,
  claims: {
    openid: ['sub'],
    profile: ['name', 'preferred_username'],
    email: ['email', 'email_verified'],
    groups: ['groups', 'department'],
  },
  scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  pkce: { required: () => true },
  ttl: { IdToken: 300, AccessToken: 300, AuthorizationCode: 60 },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(ctx, id) {
    const claims = SUBJECTS[id];
    if (!claims) return undefined;
    return { accountId: id, claims: async () => ({ ...claims }) };
  },
});

function page(uid, message) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Test provider sign-in</title></head>
<body><main><h1>Test provider</h1>${message ? `<p role="alert">${message}</p>` : ''}
<form method="post" action="/interaction/${uid}/login">
<label for="login">Username</label> <input id="login" name="login" autofocus>
<button type="submit">Sign in</button></form></main></body></html>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  if (!action) {
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(page(uid));
    return;
  }
  const form = await readForm(req);
  const account = ACCOUNTS[form.get('login')];
  if (!account) {
    res.statusCode = 400;
    res.setHeader('Content-Type', 'text/html; charset=utf-8');
    res.end(page(uid, 'Unknown user.'));
    return;
  }
  const grant = new provider.Grant({ accountId: account.sub, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, {
    login: { accountId: account.sub },
    consent: { grantId },
  }, { mergeWithLastSubmission: false });
}

const handle = provider.callback();
createServer(async (req, res) => {
  const match = /^\/interaction\/([^/?]+)(?:\/(login))?/.exec(req.url);
  if (!match) {
    handle(req, res);
    return;
  }
  try {
    await interaction(req, res, match[1], match[2]);
  } catch (error) {
    res.statusCode = 400;
    res.end(String(error));
  }
}).listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${issuer}\n`);
});
