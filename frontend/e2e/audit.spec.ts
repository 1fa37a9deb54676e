import { expect, test, type Page } from '@playwright/test';
import { baseURL, expectNoAxeViolations, graphql, login } from './fixtures';

// The Audit log page: a change and a failed sign-in show up as records,
// the filters narrow them, and the export link carries the filter. The
// names are this spec's own.
let page: Page;
const tenant = 'Audit E2E tenant';
const stranger = 'audit-e2e-nobody';

test.describe.serial('the audit log page', () => {
  test.beforeAll(async ({ browser }) => {
    // axe-core's runner needs a page of a context the test made.
    page = await (await browser.newContext()).newPage();
    // A failed sign-in, by a name no other spec uses (no throttle on theirs).
    const res = await fetch(`${baseURL()}/api/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ username: stranger, password: 'audit-e2e-wrong-pw' }),
    });
    expect(res.status).toBe(401);
    await graphql(`mutation($in: TenantInput!) { createTenant(input: $in) { id } }`, { in: { name: tenant } });
    await login(page);
  });
  test.afterAll(async () => page.context().close());

  test('lists the records, newest first, with actor, action and target', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Audit log' })).toBeVisible();
    const table = page.getByRole('table', { name: 'Audit records' });
    // The admin's own sign-in is the newest record.
    await expect(table.locator('tbody tr').first()).toHaveAttribute('data-audit-action', 'auth.sign_in');
    const created = table.locator('tr[data-audit-action="tenant.create"]', { hasText: tenant });
    await expect(created).toContainText('admin');
    await expect(created).toContainText(`name: ${tenant}`);
    await expectNoAxeViolations(page, 'on the audit log');
  });

  test('filters by action and actor, and never shows the password tried', async () => {
    await page.getByLabel('Action').selectOption('auth.sign_in_failed');
    const table = page.getByRole('table', { name: 'Audit records' });
    const failed = table.locator('tr[data-audit-action="auth.sign_in_failed"]', { hasText: stranger });
    await expect(failed).toBeVisible();
    await expect(table.locator('tbody tr:not([data-audit-action="auth.sign_in_failed"])')).toHaveCount(0);
    await expect(page.getByText('audit-e2e-wrong-pw')).toHaveCount(0);
    await page.getByLabel('Actor').fill(stranger);
    await expect(table.locator('tbody tr')).toHaveCount(1);
    const link = page.getByRole('link', { name: 'Export JSON lines' });
    await expect(link).toHaveAttribute('href', new RegExp(`actor=${stranger}`));
    await expect(link).toHaveAttribute('href', /action=auth\.sign_in_failed/);
  });
});
