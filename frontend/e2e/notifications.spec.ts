import { expect, test, type Page } from '@playwright/test';
import { baseURL, expectNoAxeViolations, login, tenantPassword, tenantUser } from './fixtures';

// Notifications and the asset watch: root creates a webhook (its secret
// shown once) and sends it a test event, which its delivery log shows; the
// tenant's analyst watches a domain, and the indicator the OpenPhish
// built-in feed stored at start (https://phish.example.com/login, from the
// loopback mirror) hits it at once, by back-matching.
let page: Page;

test.describe.serial('notifications and asset hits', () => {
  test.afterEach(async () => page?.close());

  test('root creates a webhook, sees its secret once and its test delivery', async ({ browser }) => {
    page = await browser.newPage();
    await login(page);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Notifications' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Notifications' })).toBeVisible();
    await page.getByRole('button', { name: '+ Webhook' }).click();
    const form = page.getByRole('dialog', { name: 'New webhook' });
    await form.getByLabel('Name').fill('e2e hook');
    await form.getByLabel('URL').fill('ftp://nowhere.example/');
    await form.getByRole('button', { name: 'Create' }).click();
    await expect(form.getByLabel('URL')).toHaveAttribute('aria-invalid', 'true');
    // The mirror answers 404 here: the delivery is logged as retrying.
    await form.getByLabel('URL').fill(`${process.env.TIFEEDS_E2E_MIRROR_URL}/hook?token=e2e-token`);
    await form.getByLabel('Feed health').check();
    await form.getByRole('button', { name: 'Create' }).click();
    const secret = page.getByRole('dialog', { name: 'Webhook secret' });
    await expect(secret.getByTestId('webhook-secret')).toHaveText(/^\S{16,}$/);
    await secret.getByRole('button', { name: /close/i }).first().click();
    const row = page.locator('tr[data-channel-name="e2e hook"]');
    await expect(row).toContainText('Asset hits, Feed health');
    await expect(row).not.toContainText('e2e-token');

    await row.getByRole('button', { name: 'Test e2e hook' }).click();
    await row.getByRole('button', { name: 'Deliveries of e2e hook' }).click();
    const log = page.getByRole('dialog', { name: 'Deliveries of e2e hook' });
    await expect(log.locator('tr[data-delivery-status="RETRYING"]').first()).toContainText('404', { timeout: 20_000 });
  });

  test('a tenant analyst watches a domain and sees the stored indicator hit it', async ({ browser }) => {
    page = await browser.newPage();
    await login(page, tenantUser, tenantPassword);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Assets', exact: true }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Assets' })).toBeVisible();
    await page.getByRole('button', { name: '+ Add assets' }).click();
    const form = page.getByRole('dialog', { name: 'Add assets' });
    await form.getByLabel('Values').fill('not an asset at all');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect(form.getByLabel('Values')).toHaveAttribute('aria-invalid', 'true');
    await form.getByLabel('Values').fill('Phish.Example.com\n192.0.2.0/24');
    await form.getByRole('button', { name: 'Add' }).click();
    await expect(form).toBeHidden();
    await expect(page.locator('tr[data-asset-value="phish.example.com"]')).toContainText('Domain and subdomains');
    await expect(page.locator('tr[data-asset-value="192.0.2.0/24"]')).toContainText('CIDR range');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Asset hits' }).click();
    const hit = page.locator('tr[data-hit-value="https://phish.example.com/login"]');
    await expect(async () => {
      await page.reload();
      await expect(hit).toBeVisible({ timeout: 2_000 });
    }).toPass({ timeout: 30_000 });
    await expect(hit).toContainText('phish.example.com');
    await expect(hit).toContainText('Phishing URL Feed');
  });

  test('the three pages pass axe', async ({ browser }) => {
    // axe-core's runner needs a page of a context the test made.
    const context = await browser.newContext();
    page = await context.newPage();
    await login(page);
    for (const [path, heading] of [
      ['/notifications', 'Notifications'],
      ['/assets', 'Assets'],
      ['/hits', 'Asset hits'],
    ]) {
      await page.goto(`${baseURL()}${path}`);
      await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
      await expect(page.locator('.loading')).toHaveCount(0);
      await expectNoAxeViolations(page, `on ${path}`);
    }
  });
});
