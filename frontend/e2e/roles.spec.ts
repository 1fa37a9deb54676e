import { expect, test, type Page } from '@playwright/test';
import { adminUser, baseURL, login, sortFeed, tenantName, tenantPassword, tenantUser } from './fixtures';

// What a tenant-scoped user sees: only the pages and buttons the API lets
// them use, and never an error page. The API answers FORBIDDEN to a tenant
// user for feeds, feed fields but id, name and type, tenant groups and every
// write; the dashboard must not ask for them.
let page: Page;
// GraphQL answers that carried an error, as "<operation>: <code> <message>".
let graphqlErrors: string[] = [];

test.describe.serial('a tenant-scoped session', () => {
  test.beforeAll(async ({ browser }) => {
    await sortFeed(); // indicators to look at, whichever tests ran before
    page = await browser.newPage();
    graphqlErrors = [];
    page.on('pageerror', (err) => console.log(`page error: ${err.message}`));
    page.on('response', async (res) => {
      if (!res.url().endsWith('/graphql') || res.request().method() !== 'POST') return;
      const body = (await res.json().catch(() => null)) as { errors?: { message: string; extensions?: { code?: string } }[] } | null;
      const op = (res.request().postDataJSON() as { operationName?: string } | null)?.operationName ?? '?';
      for (const e of body?.errors ?? []) graphqlErrors.push(`${op}: ${e.extensions?.code ?? ''} ${e.message}`);
    });
  });
  test.afterAll(async () => page.close());

  const noErrorShown = async () => {
    await expect(page.getByText('Something went wrong')).toHaveCount(0);
    await expect(page.locator('.error-box')).toHaveCount(0);
  };

  test('signs in to the Overview page, with only the pages a tenant may use', async () => {
    await login(page, tenantUser, tenantPassword);
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByTestId('signed-in-user')).toContainText('tenant');
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect(nav.getByRole('link')).toHaveText(['Overview', 'IoCs', 'Tenants', 'Notifications', 'Assets', 'Asset hits']);
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
    await noErrorShown();
    // The start page is the Overview page too.
    await page.goto(`${baseURL()}/`);
    await expect(page).toHaveURL(/\/overview$/);
  });

  test('the IoCs page works without the root-only feed list', async () => {
    await page.goto(`${baseURL()}/iocs?q=kilo.sort.example`);
    const row = page.locator('tr[data-ioc-value="kilo.sort.example"]');
    await expect(row).toBeVisible();
    // No feed filter (listing feeds is root-only); the sources still name their feed.
    await expect(page.getByRole('search', { name: 'Filter indicators' })).toBeVisible();
    await expect(page.getByRole('combobox', { name: /^Feed/ })).toHaveCount(0);
    await expect(row.locator('td[data-label="Sources"]')).toContainText('TSV_sort_e2e');
    await row.getByRole('button', { name: 'kilo.sort.example' }).click();
    const drawer = page.getByRole('dialog', { name: 'Indicator' });
    // Other suites' feeds may report the same IoC: this one's sighting is there.
    await expect(drawer.locator('.sighting').filter({ hasText: 'TSV_sort_e2e' })).toHaveCount(1);
    // The feed is named, not linked: its page is root-only.
    await expect(drawer.getByRole('link', { name: 'TSV_sort_e2e' })).toHaveCount(0);
    await page.keyboard.press('Escape');
    await noErrorShown();
  });

  test('the tenants page shows their tenant, read-only', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tenants' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Tenants' })).toBeVisible();
    await expect(page.locator(`tr[data-tenant-name="${tenantName}"]`)).toBeVisible();
    await expect(page.locator('tbody tr')).toHaveCount(1);
    await expect(page.getByRole('button', { name: '+ New tenant' })).toHaveCount(0);
    await expect(page.getByRole('button', { name: /^(Edit|Delete) / })).toHaveCount(0);
    await expect(page.getByRole('columnheader', { name: 'Actions' })).toHaveCount(0);
    await noErrorShown();
  });

  test('root-only pages say so instead of failing', async () => {
    for (const path of ['/feeds', '/feeds/1', '/groups']) {
      await page.goto(`${baseURL()}${path}`);
      await expect(page.getByRole('heading', { level: 1, name: 'Not available to your account' })).toBeVisible();
      await noErrorShown();
    }
    await page.getByRole('link', { name: 'start page' }).click();
    await expect(page).toHaveURL(/\/overview$/);
  });

  test('a link to a root-only page opens the start page after sign-in', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    // Signed out first: navigating away at once aborted the sign-out's
    // request, and /groups opened in the session still alive.
    await expect(page).toHaveURL(/\/login/);
    await page.goto(`${baseURL()}/groups`);
    await expect(page).toHaveURL(/\/login\?next=%2Fgroups/);
    await page.getByLabel('Username').fill(tenantUser);
    await page.getByLabel('Password').fill(tenantPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
  });

  test('the dashboard never asked the API for what a tenant may not have', async () => {
    // Every page above loaded: had any asked for a root-only field, the API
    // would have answered FORBIDDEN here.
    expect(graphqlErrors).toEqual([]);
  });
});

test.describe.serial('a root session', () => {
  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage();
  });
  test.afterAll(async () => page.close());

  test('offers every page and the root-only buttons', async () => {
    await login(page);
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByTestId('signed-in-user')).toContainText(adminUser);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await expect(nav.getByRole('link')).toHaveText(['Overview', 'Feeds', 'IoCs', 'Tenants', 'Tenant groups', 'Allowlist', 'Users', 'Audit log', 'Notifications', 'Assets', 'Asset hits']);
    await nav.getByRole('link', { name: 'Tenants' }).click();
    await expect(page.getByRole('button', { name: '+ New tenant' })).toBeVisible();
    await expect(page.locator(`tr[data-tenant-name="${tenantName}"]`).getByRole('button', { name: `Edit ${tenantName}` })).toBeVisible();
    await nav.getByRole('link', { name: 'IoCs' }).click();
    await expect(page.getByRole('combobox', { name: /^Feed/ })).toBeVisible();
  });
});
