import { expect, test, type Page } from '@playwright/test';
import { baseURL, login, openCreate, screenshot } from './fixtures';


// The premium feeds as `tifeeds serve` delivers them on first start: one per
// kind but the feed-list platform, whose feeds the user creates.
const delivered = ['Dark-web Intelligence (TAXII)', 'Threat Platform', 'Threat Intelligence API', 'Risk Lists', 'Endpoint Protection Intelligence'];
const endpoint = 'https://feeds.example.com/base/emea-1.json?key=k-e2e-123&v=2';

// One flow on one page: a premium feed is configured, then reset.
let page: Page;

function feedRow(name: string) {
  return page.locator(`tr[data-feed-name="${name}"]`);
}

/** field is the labelled field (label, input, hint, error) whose label starts with label, inside scope. */
function field(scope: ReturnType<Page['locator']>, label: RegExp) {
  return scope.locator('.field').filter({ has: page.getByLabel(label) });
}

async function dismissToasts() {
  const close = page.getByRole('button', { name: 'Dismiss' });
  while ((await close.count()) > 0) await close.first().click();
}

test.describe.serial('premium feeds', () => {
  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage();
    page.on('pageerror', (err) => console.log(`page error: ${err.message}`));
    await login(page);
  });
  test.afterAll(async () => page.close());

  test('the table lists the delivered premium feeds, disabled', async () => {
    await page.goto(`${baseURL()}/feeds?type=PREMIUM&sort=NAME:ASC`);
    const rows = page.getByRole('table', { name: 'Feeds' }).locator('tbody tr');
    await expect(rows).toHaveCount(delivered.length);
    for (const name of delivered) {
      await expect(feedRow(name).getByRole('switch')).toHaveAttribute('aria-checked', 'false');
      await expect(feedRow(name).getByTestId('status-message')).toHaveText('Disabled');
      // Premium feeds are edited and reset, never deleted.
      await expect(feedRow(name).getByRole('button', { name: `Edit ${name}` })).toBeVisible();
      await expect(feedRow(name).getByRole('button', { name: `Reset premium feed ${name}` })).toBeVisible();
      await expect(feedRow(name).getByRole('button', { name: `Delete ${name}` })).toHaveCount(0);
    }
  });

  test('enabling an unconfigured premium feed shows the server error', async () => {
    const row = feedRow('Threat Platform');
    await row.getByRole('switch').click();
    const toast = page.getByRole('alert').filter({ hasText: 'Cannot enable Threat Platform' });
    await expect(toast).toContainText('must be set before the feed can be enabled');
    // The server names the missing field; the toast names it as the form does.
    await expect(toast).toContainText(/Username|API key/);
    await expect(row.getByRole('switch')).toHaveAttribute('aria-checked', 'false');
    await dismissToasts();
  });

  test('edits a risk-list feed: its inputs, ranges, and the server message beside the field', async () => {
    await feedRow('Risk Lists').getByRole('button', { name: 'Edit Risk Lists' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Risk Lists' });
    await expect(dialog).toBeVisible();
    // Only the kind's settings: an API key and the polling frequency.
    const apiKey = dialog.getByLabel(/^API key/);
    await expect(apiKey).toHaveAttribute('type', 'password');
    await expect(field(dialog, /^API key/)).toContainText('required to enable');
    const polling = dialog.getByLabel(/^Polling frequency/);
    await expect(polling).toHaveAttribute('min', '1');
    await expect(polling).toHaveAttribute('max', '24');
    await expect(field(dialog, /^Polling frequency/).locator('.hint')).toHaveText('1 to 24 hours');
    await expect(dialog.getByLabel(/^Backfill days/)).toHaveCount(0);
    await expect(dialog.getByLabel(/^Username/)).toHaveCount(0);
    await expect(dialog.getByLabel(/^Collection URL/)).toHaveCount(0);
    // Name, description and the fixed retention are shown, not editable.
    await expect(dialog.getByLabel('Name', { exact: true })).toHaveAttribute('readonly', '');
    await expect(dialog.getByLabel('Description')).toHaveAttribute('readonly', '');
    await expect(dialog.getByLabel(/^Retention period/)).toHaveAttribute('readonly', '');
    await expect(field(dialog, /^Retention period/).locator('.hint')).toHaveText('Fixed at 14 days');

    // Out of range: the server refuses, and says so beside the polling input.
    await apiKey.fill('rk-e2e-secret');
    await polling.fill('48');
    await dialog.getByRole('button', { name: 'Save' }).click();
    const pollingField = field(dialog, /^Polling frequency/);
    await expect(pollingField.locator('.field-error')).toHaveText('must be between 1 and 24 hours');
    await expect(polling).toHaveAttribute('aria-invalid', 'true');
    await expect(field(dialog, /^API key/).locator('.field-error')).toHaveCount(0);
    await page.mouse.move(0, 0);
    await screenshot(dialog, 'premium-feed');

    await polling.fill('6');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await expect(dialog).toHaveCount(0);
    await expect(feedRow('Risk Lists').locator('td[data-label="Polling Frequency"]')).toHaveText('6 hours');

    // The key is kept and never shown: the form says one is set.
    await feedRow('Risk Lists').getByRole('button', { name: 'Edit Risk Lists' }).click();
    await expect(dialog.getByText('A secret is set; leave empty to keep it')).toBeVisible();
    await expect(dialog.getByLabel(/^API key/)).toHaveValue('');
    await expect(dialog.getByRole('checkbox', { name: 'Remove the stored API key' })).toBeVisible();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog).toHaveCount(0);
  });

  test('creates a feed-list feed through Create, then Premium feed', async () => {
    await openCreate(page, 'Premium feed');
    const dialog = page.getByRole('dialog', { name: 'Create premium feed' });
    await expect(dialog).toBeVisible();
    await expect(dialog.getByLabel(/^Category/)).toHaveValue('Threat Intelligence');
    await expect(dialog.getByText('Stored as FeedList_<name>')).toBeVisible();
    await expect(dialog.getByTestId('premium-limit')).toContainText('0 of at most 10');
    await expect(dialog.getByLabel(/^Polling frequency/)).toHaveAttribute('max', '24');
    await expect(dialog.getByLabel(/^Retention period/)).toHaveAttribute('max', '360');

    await dialog.getByLabel(/^Name/).fill('emea_e2e');
    const apiEndpoint = dialog.getByLabel(/^API endpoint/);
    await apiEndpoint.fill('https://feeds.example.com/base/emea');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    // The server's message lands on the endpoint input, not on top of the form.
    await expect(field(dialog, /^API endpoint/).locator('.field-error')).toContainText('.json');
    await apiEndpoint.fill(endpoint);
    await dialog.getByLabel(/^Polling frequency/).fill('12');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog).toHaveCount(0);

    const row = feedRow('FeedList_emea_e2e');
    await expect(row).toBeVisible();
    await expect(row.getByRole('switch')).toHaveAttribute('aria-checked', 'false');
    await expect(row.locator('td[data-label="Polling Frequency"]')).toHaveText('12 hours');

    // Its name stays editable; the endpoint is shown without its key.
    await row.getByRole('button', { name: 'Edit FeedList_emea_e2e' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit FeedList_emea_e2e' });
    await expect(edit.getByLabel(/^Name/)).toHaveValue('emea_e2e');
    await expect(edit.getByText('https://feeds.example.com/base/emea-1.json?v=2', { exact: false })).toBeVisible();
    await expect(edit.getByText('k-e2e-123')).toHaveCount(0);
    await edit.getByLabel(/^Name/).fill('emea_west_e2e');
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect(edit).toHaveCount(0);
    await expect(feedRow('FeedList_emea_west_e2e')).toBeVisible();
    await dismissToasts();
  });

  test('resets a premium feed after confirmation', async () => {
    const row = feedRow('Risk Lists');
    await row.getByRole('button', { name: 'Reset premium feed Risk Lists' }).click();
    const confirm = page.getByRole('dialog', { name: 'Reset premium feed?' });
    await expect(confirm).toContainText('clears its credentials');
    await expect(confirm).toContainText('deletes the sightings');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await expect(confirm).toHaveCount(0);
    await expect(row.locator('td[data-label="Polling Frequency"]')).toHaveText('6 hours');

    await row.getByRole('button', { name: 'Reset premium feed Risk Lists' }).click();
    await confirm.getByRole('button', { name: 'Reset premium feed' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'Risk Lists reset to its delivered state' })).toBeVisible();
    // Back to its defaults, its key gone.
    await expect(row.locator('td[data-label="Polling Frequency"]')).toHaveText('24 hours');
    await row.getByRole('button', { name: 'Edit Risk Lists' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit Risk Lists' });
    await expect(dialog.getByLabel(/^API key/)).toBeVisible();
    await expect(dialog.getByText('A secret is set; leave empty to keep it')).toHaveCount(0);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });
});
