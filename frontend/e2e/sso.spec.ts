import { expect, test } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminGraphQL, baseURL } from './fixtures';

// SAML single sign-on in Chromium: the organisation field sends the browser to
// a real IdP (pysaml2, server/testdata/saml_idp.py), whose page posts the
// signed answer across sites to tifeeds' ACS; the SameSite=Strict session
// cookie set there must reach the dashboard.
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let idp: ChildProcess | undefined;
let idpURL = '';
let dir = '';
let tenantId = '';

test.describe.serial('single sign-on', () => {
  test.beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tifeeds-idp-'));
    const proc = spawn('/usr/bin/python3', [join(repoRoot, 'server/testdata/saml_idp.py'), '--dir', dir], { stdio: ['ignore', 'pipe', 'ignore'] });
    idp = proc;
    idpURL = await new Promise<string>((ok, fail) => {
      let out = '';
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening (\S+)/.exec(out);
        if (m) ok(m[1]);
      });
      proc.once('exit', (code) => fail(new Error(`the IdP exited (${code}): is python3-pysaml2 installed?`)));
    });
    const { createTenant } = await adminGraphQL<{ createTenant: { id: string } }>(
      baseURL(),
      'mutation ($input: TenantInput!) { createTenant(input: $input) { id } }',
      {
        input: {
          name: 'Globex SSO',
          authenticationMethod: 'sso_saml',
          ssoConfig: {
            ssoConfigMethod: 'manual',
            issuerUrl: `${idpURL}/metadata`,
            ssoEntryPoint: `${idpURL}/sso`,
            idpCertificate: readFileSync(join(dir, 'cert.pem'), 'utf8'),
          },
        },
      },
    );
    tenantId = createTenant.id;
  });

  test.afterAll(() => {
    idp?.kill('SIGTERM');
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('signs in through the organisation’s IdP and lands on the dashboard', async ({ page }) => {
    await page.goto(`${baseURL()}/login`);
    await expect(page.getByRole('heading', { name: 'Sign in with SSO' })).toBeVisible();
    await page.getByLabel('Organisation').fill(tenantId);
    await page.getByRole('button', { name: 'Continue with SSO' }).click();
    // The IdP's own sign-in page.
    await expect(page).toHaveURL(new RegExp(`^${idpURL}/sso\\?`));
    await page.locator('#idp-user').fill('globex_sso_user');
    await page.locator('#idp-submit').click();
    // Its page posts to the ACS, whose page moves on to the dashboard.
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByTestId('signed-in-user')).toContainText('globex_sso_user');
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
    const cookie = (await page.context().cookies(baseURL())).find((c) => c.name === 'tifeeds_session');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Strict');
  });

  test('an organisation not set up for SSO gets a page that says so', async ({ page }) => {
    await page.goto(`${baseURL()}/login`);
    await page.getByLabel('Organisation').fill('no-such-organisation');
    await page.getByRole('button', { name: 'Continue with SSO' }).click();
    await expect(page.locator('#message')).toContainText('not set up for single sign-on');
    await page.getByRole('link', { name: 'Back to sign-in' }).click();
    await expect(page.getByRole('heading', { name: 'Sign in to tifeeds' })).toBeVisible();
  });

  test('a user of the SSO organisation is told to use SSO when they try a password', async ({ page }) => {
    await adminGraphQL(baseURL(), 'mutation ($in: CreateUserInput!) { createUser(input: $in) { id } }', {
      in: { username: 'globex_password_user', scope: 'TENANT', tenantId, password: 'globex-Passw0rd' },
    });
    await page.goto(`${baseURL()}/login`);
    await page.getByLabel('Username').fill('globex_password_user');
    await page.getByLabel('Password').fill('globex-Passw0rd');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toContainText('Sign in with SSO');
    await expect(page.getByRole('heading', { name: 'Sign in to tifeeds' })).toBeVisible();
  });
});
