import { expect, test } from '@playwright/test';
import { Secret, TOTP } from 'otpauth';
import { baseURL, expectNoAxeViolations, graphql, login } from './fixtures';

// MFA with TOTP: a user of a tenant that requires MFA enrols at their first
// sign-in (the secret read from the page, codes computed here by the
// otpauth package), keeps the recovery codes, signs out, and signs in again
// with a code and then with a recovery code; root sees MFA on and resets it.
const username = 'mfa_e2e';
const password = 'mfa-e2e-Passw0rd';

/** code is the TOTP code of secret (base32) at the given time. */
function code(secret: string, at: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: at });
}

async function signInWithPassword(page: import('@playwright/test').Page) {
  await page.goto(`${baseURL()}/login`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test.describe.serial('MFA', () => {
  let secret = '';
  let recovery: string[] = [];

  test.beforeAll(async () => {
    const { createTenant } = await graphql<{ createTenant: { id: string } }>(
      'mutation ($input: TenantInput!) { createTenant(input: $input) { id } }',
      { input: { name: 'MFA Corp E2E', mfaEnabled: true } },
    );
    await graphql('mutation ($input: CreateUserInput!) { createUser(input: $input) { id } }', {
      input: { username, password, scope: 'TENANT', tenantId: createTenant.id },
    });
  });

  test('a user of a tenant that requires MFA enrols at sign-in', async ({ page }) => {
    await signInWithPassword(page);
    await expect(page.getByRole('heading', { name: 'Set up MFA' })).toBeVisible();
    await expect(page.getByRole('img', { name: 'QR code of the MFA secret' })).toBeVisible();
    secret = await page.getByTestId('mfa-secret').inputValue();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await expectNoAxeViolations(page, 'on the MFA enrolment');
    await page.getByLabel('Code from your app').fill(code(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on MFA' }).click();
    await expect(page.getByRole('heading', { name: 'Save your recovery codes' })).toBeVisible();
    recovery = await page.getByTestId('recovery-codes').locator('li').allTextContents();
    await expectNoAxeViolations(page, 'on the recovery codes');
    expect(recovery).toHaveLength(10);
    await page.getByRole('button', { name: 'Continue to the dashboard' }).click();
    await expect(page.getByTestId('signed-in-user')).toContainText(username);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page).toHaveURL(/\/login/);
  });

  test('signs in again with a code, then with a recovery code', async ({ page }) => {
    await signInWithPassword(page);
    await expect(page.getByRole('heading', { name: 'Two-step sign-in' })).toBeVisible();
    await expectNoAxeViolations(page, 'on the two-step sign-in');
    await page.getByLabel('Code from your authenticator app').fill('000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toContainText('wrong or already used code');
    // The next step's code: the enrolment took the current one, and a code
    // of the step after it is accepted as well.
    await page.getByLabel('Code from your authenticator app').fill(code(secret, Date.now() + 30_000));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByTestId('signed-in-user')).toContainText(username);
    await page.getByTestId('signed-in-user').click();
    await expect(page.getByTestId('mfa-status')).toContainText('MFA is on');
    await expect(page.getByTestId('mfa-status')).toContainText('10 recovery codes left');
    await expect(page.getByText('Your organisation requires MFA: it cannot be turned off.')).toBeVisible();
    await expectNoAxeViolations(page, 'on the Account page with MFA on');
    await page.getByRole('button', { name: 'Sign out' }).click();

    await signInWithPassword(page);
    await page.getByRole('button', { name: 'Use a recovery code instead' }).click();
    await page.getByLabel('Recovery code').fill(recovery[0]);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByTestId('signed-in-user')).toContainText(username);
  });

  test('root sees MFA on and resets it', async ({ page }) => {
    await login(page);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
    const row = page.locator(`tr[data-username="${username}"]`);
    await expect(row).toContainText('On');
    await row.getByRole('button', { name: `Reset the MFA of ${username}` }).click();
    await page.getByRole('dialog', { name: 'Reset MFA?' }).getByRole('button', { name: 'Reset MFA' }).click();
    await expect(row.getByRole('button', { name: `Reset the MFA of ${username}` })).toHaveCount(0);
    await expect(row).toContainText('Off');
  });
});
