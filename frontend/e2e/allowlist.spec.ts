import { expect, test, type Page } from '@playwright/test';
import { login } from './fixtures';

// The Allowlist page: add with validation, the lookup naming the entry, and
// delete after confirming. The domain is this spec's own, so other specs'
// indicators stay untouched.
let page: Page;
const domain = 'allow-e2e.example';

test.describe.serial('the allowlist page', () => {
  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage();
    await login(page);
  });
  test.afterAll(async () => page.close());

  test('refuses a bad value with the reason, then adds an entry', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Allowlist' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Allowlist' })).toBeVisible();
    await page.getByRole('button', { name: '+ Add entry' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add allowlist entry' });
    await dialog.getByLabel('Value').fill('not a value');
    await dialog.getByRole('button', { name: 'Add entry' }).click();
    await expect(dialog.getByText(/not an IP address, a CIDR range, a domain or a URL prefix/)).toBeVisible();
    await expect(dialog.getByLabel('Value')).toHaveAttribute('aria-invalid', 'true');

    await dialog.getByLabel('Value').fill(`  ${domain.toUpperCase()}. `);
    await dialog.getByLabel('Comment').fill('our own test domain');
    await dialog.getByRole('button', { name: 'Add entry' }).click();
    await expect(dialog).toBeHidden();
    const row = page.locator(`tr[data-entry-value="${domain}"]`);
    await expect(row).toContainText('Domain and subdomains');
    await expect(row).toContainText('our own test domain');
  });

  test('the lookup says which entry covers a value', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'IoCs' }).click();
    await page.getByRole('button', { name: 'Bulk lookup' }).click();
    await page.getByLabel('Values to look up').fill(`cdn.${domain}\n8.8.8.8`);
    await page.getByRole('button', { name: 'Look up' }).click();
    const results = page.getByRole('table', { name: 'Lookup results' });
    await expect(results.locator(`tr[data-lookup-input="cdn.${domain}"]`)).toContainText(`Allowlisted by user ${domain}`);
    await expect(results.locator('tr[data-lookup-input="8.8.8.8"]')).toContainText('Allowlisted by public-dns 8.8.8.8');
    await page.getByRole('button', { name: 'Bulk lookup' }).click();
  });

  test('deletes an entry after confirming', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Allowlist' }).click();
    const row = page.locator(`tr[data-entry-value="${domain}"]`);
    await row.getByRole('button', { name: `Delete ${domain}` }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete allowlist entry?' });
    await expect(confirm).toContainText('store what it covered again');
    await confirm.getByRole('button', { name: 'Delete' }).click();
    await expect(row).toHaveCount(0);
  });
});
