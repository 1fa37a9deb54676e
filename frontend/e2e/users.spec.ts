import { expect, test, type Page } from '@playwright/test';
import { baseURL, login, tenantName } from './fixtures';

// The Users page: create a tenant user (a field error first), reset their
// password (shown once; at the next sign-in they must choose a new one),
// then disable them, which ends their session at once.
let admin: Page;
const username = 'users_e2e';
const firstPassword = 'first-Passw0rd';
const newPassword = 'chosen-Passw0rd';

test.describe.serial('the users page', () => {
  test.beforeAll(async ({ browser }) => {
    admin = await browser.newPage();
    await login(admin);
  });
  test.afterAll(async () => admin.close());

  test('creates a user, refusing a short password beside its field', async () => {
    await admin.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
    await expect(admin.getByRole('heading', { level: 1, name: 'Users' })).toBeVisible();
    await admin.getByRole('button', { name: '+ New user' }).click();
    const dialog = admin.getByRole('dialog', { name: 'New user' });
    await dialog.getByLabel('Username').fill(username);
    await dialog.getByLabel('Password').fill('short');
    await dialog.getByLabel('Tenant').selectOption({ label: tenantName });
    await dialog.getByRole('button', { name: 'Create user' }).click();
    await expect(dialog.getByText(/at least 8 characters/).last()).toBeVisible();
    await expect(dialog.getByLabel('Password')).toHaveAttribute('aria-invalid', 'true');
    await dialog.getByLabel('Password').fill(firstPassword);
    await dialog.getByRole('button', { name: 'Create user' }).click();
    await expect(dialog).toBeHidden();
    const row = admin.locator(`tr[data-username="${username}"]`);
    await expect(row).toContainText('tenant');
    await expect(row).toContainText(tenantName);
    await expect(row).toContainText('Enabled');
    await expect(row).toContainText('Never');
  });

  test('resets the password; the user must choose a new one, then is disabled', async ({ browser }) => {
    const row = admin.locator(`tr[data-username="${username}"]`);
    await row.getByRole('button', { name: `Reset the password of ${username}` }).click();
    await admin.getByRole('dialog', { name: 'Reset password?' }).getByRole('button', { name: 'Reset password' }).click();
    const shown = admin.getByRole('dialog', { name: `One-time password of ${username}` });
    const once = await shown.getByTestId('shown-once').inputValue();
    expect(once.length).toBeGreaterThanOrEqual(16);
    await shown.getByRole('button', { name: 'Done' }).click();
    await expect(shown).toBeHidden();

    const context = await browser.newContext();
    const user = await context.newPage();
    await user.goto(`${baseURL()}/login`);
    await user.getByLabel('Username').fill(username);
    await user.getByLabel('Password').fill(firstPassword);
    await user.getByRole('button', { name: 'Sign in' }).click();
    await expect(user.getByRole('alert')).toContainText('Wrong username or password');
    await user.getByLabel('Password').fill(once);
    await user.getByRole('button', { name: 'Sign in' }).click();
    await expect(user.getByRole('heading', { name: 'Choose a new password' })).toBeVisible();
    await expect(user.getByRole('navigation', { name: 'Main' })).toHaveCount(0);
    await user.getByLabel('Current password').fill(once);
    await user.getByLabel('New password', { exact: true }).fill(newPassword);
    await user.getByLabel('New password again').fill(newPassword);
    await user.getByRole('button', { name: 'Change password' }).click();
    await expect(user.getByTestId('signed-in-user')).toContainText(username);

    await row.getByRole('button', { name: `Disable ${username}` }).click();
    await expect(row).toContainText('Disabled');
    // The session ended: the next request signs the dashboard out.
    await user.reload();
    await expect(user).toHaveURL(/\/login/);
    await user.getByLabel('Username').fill(username);
    await user.getByLabel('Password').fill(newPassword);
    await user.getByRole('button', { name: 'Sign in' }).click();
    await expect(user.getByRole('alert')).toContainText('Wrong username or password');
    await context.close();
  });
});
