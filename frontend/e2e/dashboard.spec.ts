import { expect, test, type Browser, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { adminPassword, adminUser, baseURL, login, openCreate, screenshot, slowRows, tsvURL } from './fixtures';

const feedName = 'TSV_acme_e2e';

// Each group is a flow that builds on itself (a feed is created, then run,
// then its IoCs are searched), so its tests share one page and run in order;
// the groups are independent, so a failure in one does not hide the others.
let page: Page;
// Messages the dashboard received over its graphql-transport-ws websocket.
let wsFrames: string[] = [];

async function openPage(browser: Browser, signIn: boolean) {
  page = await browser.newPage();
  wsFrames = [];
  page.on('pageerror', (err) => console.log(`page error: ${err.message}`));
  page.on('websocket', (ws) => ws.on('framereceived', (f) => wsFrames.push(String(f.payload))));
  if (signIn) await login(page);
}

async function dismissToasts() {
  const close = page.getByRole('button', { name: 'Dismiss' });
  while ((await close.count()) > 0) await close.first().click();
}

function feedRow(name: string) {
  return page.locator(`tr[data-feed-name="${name}"]`);
}

test.describe.serial('sign-in and navigation', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, false));
  test.afterAll(async () => page.close());

  test('refuses a wrong password, then signs in and shows the user', async () => {
    await page.goto(`${baseURL()}/iocs`);
    await expect(page).toHaveURL(/\/login\?next=%2Fiocs/);
    await page.getByLabel('Username').fill(adminUser);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).toContainText('Wrong username or password');

    await page.getByLabel('Password').fill(adminPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where the user was going, signed in.
    await expect(page).toHaveURL(/\/iocs$/);
    await expect(page.getByTestId('signed-in-user')).toContainText(adminUser);
    await expect(page.getByTestId('signed-in-user')).toContainText('root');
  });

  test('navigates between pages by link and with back and forward', async () => {
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Feeds' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Feeds' })).toBeVisible();
    await nav.getByRole('link', { name: 'Tenants' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Tenants' })).toBeVisible();
    await nav.getByRole('link', { name: 'Tenant groups' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Tenant groups' })).toBeVisible();
    await page.goBack();
    await expect(page).toHaveURL(/\/tenants$/);
    await expect(page.getByRole('heading', { level: 1, name: 'Tenants' })).toBeVisible();
    await page.goForward();
    await expect(page).toHaveURL(/\/groups$/);
    // A deep link survives a reload: the server hands every path to the SPA.
    await page.goto(`${baseURL()}/feeds?q=nothing-matches-this`);
    await expect(page.getByLabel('Search feeds')).toHaveValue('nothing-matches-this');
  });

  test('signs out and in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect(page).toHaveURL(/\/login/);
    await page.goto(`${baseURL()}/feeds`);
    await expect(page).toHaveURL(/\/login/);
    await page.getByLabel('Username').fill(adminUser);
    await page.getByLabel('Password').fill(adminPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByTestId('signed-in-user')).toContainText(adminUser);
  });

});

test.describe.serial('feeds and indicators', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('creates a TSV feed, showing the server validation beside the field', async () => {
    await page.goto(`${baseURL()}/feeds`);
    await openCreate(page, 'Custom feed');
    const dialog = page.getByRole('dialog', { name: 'Create custom feed' });
    await expect(dialog).toBeVisible();
    // TAXII is the default and offers backfill; TSV does not.
    await expect(dialog.getByLabel('Backfill days')).toBeVisible();
    await dialog.getByText('TSV', { exact: true }).click();
    await expect(dialog.getByLabel('Backfill days')).toHaveCount(0);

    // No name and a polling frequency past its range: the server refuses
    // both at once, and the form says each beside its field.
    await expect(dialog.getByText('1 to 168 hours (a week)')).toBeVisible();
    await dialog.getByLabel('Collection URL').fill(tsvURL());
    await dialog.getByLabel('Polling frequency (hours)').fill('500');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog.locator('.field-invalid').filter({ hasText: 'Name' }).locator('.field-error')).toBeVisible();
    await expect(dialog.locator('.field-invalid').filter({ hasText: 'Polling frequency' }).locator('.field-error')).toHaveText('must be between 1 and 168 hours');

    await dialog.getByLabel('Name', { exact: true }).fill('acme_e2e');
    await dialog.getByLabel('Polling frequency (hours)').fill('1');
    await dialog.getByLabel('Retention period (days)').fill('30');
    await dialog.getByLabel('Description').fill('Local TSV test feed');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog).toHaveCount(0);
    await expect(feedRow(feedName)).toBeVisible();
    await expect(feedRow(feedName).getByRole('switch')).toHaveAttribute('aria-checked', 'true');
  });

  test('runs the feed and its status becomes Success without reload', async () => {
    const row = feedRow(feedName);
    // The table listens on the websocket; while it is up it polls only once a minute.
    await expect.poll(() => wsFrames.some((f) => f.includes('"connection_ack"'))).toBe(true);
    await row.getByRole('button', { name: 'Run now' }).click();
    await expect(row.getByTestId('status-message')).toHaveText('Success', { timeout: 30_000 });
    await expect(row.locator('.dot-success')).toBeVisible();
    const pushed = wsFrames.filter((f) => f.includes('"feedStatusChanged"') && f.includes(feedName));
    expect(pushed.some((f) => f.includes('"statusMessage":"Success"')), 'a live status event with Success').toBe(true);
  });

  test('shows the run history with counts and rejected rows', async () => {
    await feedRow(feedName).getByRole('link', { name: feedName }).click();
    await expect(page.getByRole('heading', { level: 1, name: feedName })).toBeVisible();
    await expect(page.getByTestId('feed-status-message')).toHaveText('Success');
    const run = page.getByRole('table', { name: 'Runs' }).locator('tbody tr').first();
    await expect(run.locator('td[data-label="Stored"]')).toHaveText('4');
    await expect(run.locator('td[data-label="Rejected"]')).toHaveText('1');
    await run.getByRole('button', { name: 'Details' }).click();
    await expect(page.locator('.rejections li')).toHaveCount(1);
    await page.goBack();
    await expect(page).toHaveURL(/\/feeds$/);
    await expect(feedRow(feedName)).toBeVisible();
  });

  test('a feed whose source fails shows Error in red', async () => {
    await openCreate(page, 'Custom feed');
    const dialog = page.getByRole('dialog', { name: 'Create custom feed' });
    await dialog.getByText('TSV', { exact: true }).click();
    await dialog.getByLabel('Name', { exact: true }).fill('partner_e2e');
    await dialog.getByLabel('Collection URL').fill(tsvURL().replace('/feed.tsv', '/gone.tsv'));
    await dialog.getByLabel('Polling frequency (hours)').fill('6');
    await dialog.getByLabel('Retention period (days)').fill('90');
    await dialog.getByLabel('Description').fill('Partner blocklist (answers 404 in tests)');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog).toHaveCount(0);
    const row = feedRow('TSV_partner_e2e');
    await row.getByRole('button', { name: 'Run now' }).click();
    await expect(row.locator('.dot-error')).toBeVisible({ timeout: 30_000 });
    await expect(row.getByTestId('status-message')).not.toHaveText(/^(Success|Initializing|Running)$/);

    await dismissToasts();
    await page.mouse.move(0, 0);
    // Clicking the new row scrolled it into view: the README shows the page from its top.
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'feeds');
  });

  test('bulk lookup tells known values from unknown and invalid ones', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'IoCs' }).click();
    await page.getByRole('button', { name: 'Bulk lookup' }).click();
    await page.getByLabel('Values to look up').fill('203.0.113.7\nEVIL.example.com, 198.51.100.1\nnot_an_indicator');
    await expect(page.getByText('4 values')).toBeVisible();
    await page.getByRole('button', { name: 'Look up' }).click();
    const results = page.getByRole('table', { name: 'Lookup results' });
    await expect(results.locator('tbody tr')).toHaveCount(4);
    await expect(results.locator('tr[data-lookup-input="203.0.113.7"]')).toContainText('Known');
    await expect(results.locator('tr[data-lookup-input="203.0.113.7"] td[data-label="Score"]')).toHaveText('90');
    await expect(results.locator('tr[data-lookup-input="EVIL.example.com"]')).toContainText('evil.example.com');
    await expect(results.locator('tr[data-lookup-input="EVIL.example.com"]')).toContainText('Known');
    await expect(results.locator('tr[data-lookup-input="198.51.100.1"]')).toContainText('Not found');
    const invalid = results.locator('tr[data-lookup-input="not_an_indicator"] td[data-label="Result"]');
    // Said once, without repeating the value its row shows.
    await expect(invalid).toHaveText('Not an indicatornot a valid host name');
    await expect(page.getByText(/separated by new lines, spaces, tabs, commas or semicolons/)).toBeVisible();
    await expect(page.locator('.lookup-summary')).toHaveText('2 known · 1 not found · 1 not an indicator');
    await page.getByRole('button', { name: 'Bulk lookup' }).click();
  });

  test('finds an ingested IoC and shows its sightings', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'IoCs' }).click();
    const rows = page.getByRole('table', { name: 'Indicators' }).locator('tbody tr');
    await expect(rows.first()).toBeVisible();
    await expect(page.locator('tr[data-ioc-value="evil.example.com"]')).toBeVisible();
    await dismissToasts();
    await page.mouse.move(0, 0);
    await screenshot(page, 'iocs');

    await page.getByLabel('Search', { exact: true }).fill('203.0.113.7');
    await expect(page).toHaveURL(/q=203\.0\.113\.7/);
    await expect(rows).toHaveCount(1);
    const row = page.locator('tr[data-ioc-value="203.0.113.7"]');
    await expect(row.locator('td[data-label="Score"]')).toHaveText('90');
    await expect(row.locator('td[data-label="Tags"]')).toContainText('emerging_threat');
    // Export what the filters show, as a plain list for a firewall.
    await page.getByText('Export', { exact: true }).click();
    const [txt] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('group', { name: 'Export indicators' }).getByRole('link', { name: /Plain text/ }).click(),
    ]);
    expect(readFileSync((await txt.path())!, 'utf8').trim()).toBe('203.0.113.7');
    await page.getByText('Export', { exact: true }).click();

    await row.getByRole('button', { name: '203.0.113.7' }).click();
    const drawer = page.getByRole('dialog', { name: 'Indicator' });
    await expect(drawer.locator('.sighting')).toHaveCount(1);
    await expect(drawer.locator('.sighting')).toContainText('botnet_x');
    await expect(drawer.locator('.sighting')).toContainText(feedName);
    await page.keyboard.press('Escape');
    await expect(drawer).toHaveCount(0);

    await page.getByLabel('Search', { exact: true }).fill('');
    await page.getByRole('group', { name: 'Type' }).getByText('Domain', { exact: true }).click();
    await expect(page).toHaveURL(/type=DOMAIN/);
    await expect(rows).toHaveCount(1);
    await expect(page.locator('tr[data-ioc-value="evil.example.com"]')).toBeVisible();
    await page.getByLabel('Min score').fill('95');
    await expect(page.getByText('No indicator matches.')).toBeVisible();
    await page.getByRole('button', { name: 'Clear all' }).click();
    await expect(page).not.toHaveURL(/type=/);
  });

});

// Independent tests (not serial): a failure re-opens the page and goes on.
test.describe('feeds table functions', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  const rows = () => page.getByRole('table', { name: 'Feeds' }).locator('tbody tr');

  test('searches, sorts and chooses columns', async () => {
    // The custom feeds only: the delivered premium feeds would sort around them.
    await page.goto(`${baseURL()}/feeds?type=CUSTOM`);
    await expect(feedRow(feedName)).toBeVisible();

    await page.getByLabel('Search feeds').fill('acme_e2e');
    await expect(page).toHaveURL(/q=acme_e2e/);
    await expect(rows()).toHaveCount(1);
    await page.getByLabel('Search feeds').fill('');
    await expect(page).not.toHaveURL(/q=/);
    await expect(page).toHaveURL(/type=CUSTOM/);
    await expect.poll(() => rows().count()).toBeGreaterThan(1);

    // Sorting by name, descending on the second click.
    const nameHeader = page.getByRole('columnheader', { name: /Name/ });
    await nameHeader.getByRole('button').click();
    await expect(nameHeader).toHaveAttribute('aria-sort', 'ascending');
    await expect(rows().first()).toHaveAttribute('data-feed-name', feedName); // TSV_acme… < TSV_partner…
    await nameHeader.getByRole('button').click();
    await expect(nameHeader).toHaveAttribute('aria-sort', 'descending');
    await expect(page).toHaveURL(/sort=NAME%3ADESC|sort=NAME:DESC/);
    await expect(rows().last()).toHaveAttribute('data-feed-name', feedName);
    await nameHeader.getByRole('button').click(); // back to the server's order
    await expect(nameHeader).not.toHaveAttribute('aria-sort');

    // The column chooser hides a column and brings it back.
    await page.getByText('Columns', { exact: true }).click();
    const chooser = page.getByRole('group', { name: 'Visible columns' });
    await chooser.getByRole('checkbox', { name: 'Description' }).uncheck();
    await expect(page.getByRole('columnheader', { name: 'Description' })).toHaveCount(0);
    await chooser.getByRole('checkbox', { name: 'Description' }).check();
    await expect(page.getByRole('columnheader', { name: /Description/ })).toBeVisible();
    await page.getByText('Columns', { exact: true }).click();
  });

  test('saves a view and applies it again', async () => {
    // Filters come from the address here, so this does not depend on facets.
    await page.goto(`${baseURL()}/feeds?type=CUSTOM&statusMessage=Success`);
    await expect(rows()).toHaveCount(1);
    await page.getByText('Columns', { exact: true }).click();
    await page.getByRole('group', { name: 'Visible columns' }).getByRole('checkbox', { name: 'Icon' }).uncheck();
    await page.getByText('Columns', { exact: true }).click();

    await page.getByRole('button', { name: 'Save view…' }).click();
    const save = page.getByRole('dialog', { name: 'Save view' });
    await save.getByLabel('View name').fill('Custom successes');
    await save.getByLabel('Open the feeds table with this view by default').check();
    await save.getByRole('button', { name: 'Save view' }).click();
    await expect(save).toHaveCount(0);
    await expect(page.getByLabel('Select view')).not.toHaveValue('');

    // The default view opens the table when its address says nothing else.
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'IoCs' }).click();
    await nav.getByRole('link', { name: 'Feeds' }).click();
    await expect(page).toHaveURL(/type=CUSTOM/);
    await expect(rows()).toHaveCount(1);
    await expect(page.getByLabel('Select view').locator('option:checked')).toHaveText('Custom successes (default)');

    await page.getByLabel('Select view').selectOption({ label: 'All columns, no filters' });
    await expect(page).not.toHaveURL(/type=CUSTOM/);
    await expect.poll(() => rows().count()).toBeGreaterThan(1);
    await expect(page.getByRole('columnheader', { name: 'Icon' })).toBeVisible();

    await page.getByLabel('Select view').selectOption({ label: 'Custom successes (default)' });
    await expect(page).toHaveURL(/type=CUSTOM/);
    await expect(page).toHaveURL(/statusMessage=Success/);
    await expect(rows()).toHaveCount(1);
    await expect(page.getByRole('columnheader', { name: 'Icon' })).toHaveCount(0);

    // Delete it, after confirming; the table returns to everything.
    await page.getByRole('button', { name: 'Delete view Custom successes' }).click();
    await page.getByRole('dialog', { name: 'Delete view?' }).getByRole('button', { name: 'Delete' }).click();
    await expect(page.getByLabel('Select view').locator('option', { hasText: 'Custom successes' })).toHaveCount(0);
    await expect(page).not.toHaveURL(/type=CUSTOM/);
    await nav.getByRole('link', { name: 'IoCs' }).click();
    await nav.getByRole('link', { name: 'Feeds' }).click();
    await expect(page).not.toHaveURL(/type=CUSTOM/);
  });

  test('filters by a Last Ingestion range', async () => {
    await page.goto(`${baseURL()}/feeds`);
    await expect.poll(() => rows().count()).toBeGreaterThan(1);
    await page.getByRole('button', { name: 'Filters', exact: true }).click();
    const range = page.getByRole('complementary', { name: 'Filters' }).getByRole('group', { name: /Last Ingestion/ });
    const local = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    const dayAgo = new Date(Date.now() - 86_400_000);
    await range.getByLabel('From').fill(local(dayAgo));
    await expect(page).toHaveURL(/from=/);
    // Only the feeds that have ingested: this one and the built-in OpenPhish
    // feed, which the mirror of global-setup serves a list; the failing one never has.
    await expect
      .poll(async () => (await rows().evaluateAll((rs) => rs.map((r) => r.getAttribute('data-feed-name')))).sort())
      .toEqual(['Phishing URL Feed', feedName].sort());
    await range.getByLabel('To').fill(local(new Date(dayAgo.getTime() + 3_600_000)));
    await expect(page.getByText('No feed matches.')).toBeVisible();
    await page.getByRole('button', { name: 'Remove filter Last Ingestion' }).click();
    await expect(page).not.toHaveURL(/from=|to=/);
    await expect.poll(() => rows().count()).toBeGreaterThan(1);
    await page.getByRole('button', { name: 'Filters', exact: true }).click();
  });

  test('filters with value counts, and clears one filter or all', async () => {
    await page.goto(`${baseURL()}/feeds`);
    await page.getByRole('button', { name: 'Filters', exact: true }).click();
    const panel = page.getByRole('complementary', { name: 'Filters' });
    const custom = panel.getByRole('group', { name: 'Type' }).getByRole('checkbox', { name: /Custom/ });
    // The checkbox follows the address, which changes just after the click.
    await custom.click();
    await expect(custom).toBeChecked();
    await expect(page).toHaveURL(/type=CUSTOM/);
    await expect(rows()).toHaveCount(2);
    await expect(page.getByRole('list', { name: 'Active filters' })).toContainText('Type: Custom');
    // The facet's count agrees with what the table shows.
    await expect(panel.getByRole('group', { name: 'Type' }).locator('label', { hasText: 'Custom' }).locator('.facet-count')).toHaveText('2');

    const success = panel.getByRole('group', { name: /Status Message/ }).getByRole('checkbox', { name: /Success/ });
    await success.click();
    await expect(success).toBeChecked();
    await expect(page).toHaveURL(/statusMessage=Success/);
    await expect(rows()).toHaveCount(1);
    // Counts follow the other filters: with Success chosen, one custom feed is left.
    await expect(panel.getByRole('group', { name: 'Type' }).locator('label', { hasText: 'Custom' }).locator('.facet-count')).toHaveText('1');

    await page.getByRole('button', { name: 'Remove filter Type Custom' }).click();
    await expect(page).not.toHaveURL(/type=CUSTOM/);
    await expect(page).toHaveURL(/statusMessage=Success/);
    await page.getByRole('button', { name: 'Clear all filters' }).click();
    await expect(page).not.toHaveURL(/statusMessage/);

    await page.mouse.move(0, 0);
    await screenshot(page, 'feeds-filters');
  });
});

test.describe.serial('feeds export', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('exports the filtered table as CSV, selected columns or all', async () => {
    await page.goto(`${baseURL()}/feeds?q=acme_e2e&sort=NAME:DESC`);
    await expect(feedRow(feedName)).toBeVisible();
    await page.getByText('Columns', { exact: true }).click();
    await page.getByRole('group', { name: 'Visible columns' }).getByRole('checkbox', { name: 'Description' }).uncheck();
    await page.getByText('Columns', { exact: true }).click();

    await page.getByText('Export CSV', { exact: true }).click();
    const [selected] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('group', { name: 'Export CSV' }).getByRole('link', { name: 'Selected columns' }).click(),
    ]);
    expect(selected.suggestedFilename()).toMatch(/\.csv$/);
    const csv = readFileSync((await selected.path())!, 'utf8').trim().split(/\r?\n/);
    expect(csv).toHaveLength(2); // header + the one feed the search leaves
    expect(csv[0]).not.toMatch(/description/i);
    expect(csv[0]).toMatch(/name/i);
    expect(csv[1]).toContain(feedName);

    const [all] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('group', { name: 'Export CSV' }).getByRole('link', { name: 'All columns' }).click(),
    ]);
    const allCsv = readFileSync((await all.path())!, 'utf8').trim().split(/\r?\n/);
    expect(allCsv[0]).toMatch(/description/i);
    expect(allCsv[1]).toContain('Local TSV test feed');

    await page.getByText('Columns', { exact: true }).click();
    await page.getByRole('group', { name: 'Visible columns' }).getByRole('button', { name: 'Show all' }).click();
  });
});

test.describe.serial('run progress', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('the feed page shows a live progress bar during a run', async () => {
    await page.goto(`${baseURL()}/feeds`);
    await openCreate(page, 'Custom feed');
    const dialog = page.getByRole('dialog', { name: 'Create custom feed' });
    await dialog.getByText('TSV', { exact: true }).click();
    await dialog.getByLabel('Name', { exact: true }).fill('slow_e2e');
    await dialog.getByLabel('Collection URL').fill(tsvURL().replace('/feed.tsv', '/slow.tsv'));
    await dialog.getByLabel('Polling frequency (hours)').fill('24');
    await dialog.getByLabel('Retention period (days)').fill('7');
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog).toHaveCount(0);
    await feedRow('TSV_slow_e2e').getByRole('link', { name: 'TSV_slow_e2e' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'TSV_slow_e2e' })).toBeVisible();
    await expect.poll(() => wsFrames.some((f) => f.includes('"connection_ack"'))).toBe(true);

    await page.getByRole('button', { name: 'Run now' }).click();
    const bar = page.getByRole('progressbar', { name: 'Records handled' });
    await expect(bar).toBeVisible();
    await expect(page.getByRole('status', { name: 'Run in progress' })).toContainText('fetched');
    // When the run ends the bar goes and the history shows the run.
    await expect(bar).toHaveCount(0, { timeout: 30_000 });
    const run = page.getByRole('table', { name: 'Runs' }).locator('tbody tr').first();
    await expect(run.locator('td[data-label="Stored"]')).toHaveText(String(slowRows));
    await expect(page.getByTestId('feed-status-message')).toHaveText('Success');
  });
});

test.describe.serial('feeds table run state', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('the table shows a run in flight with its download, and Run now says it is already running', async () => {
    await page.goto(`${baseURL()}/feeds?q=slow_e2e`);
    const row = feedRow('TSV_slow_e2e');
    await expect(row.locator('.dot-success')).toBeVisible();
    await expect.poll(() => wsFrames.some((f) => f.includes('"connection_ack"'))).toBe(true);

    await row.getByRole('button', { name: 'Run now' }).click();
    await expect(row.getByTestId('running')).toContainText('Running');
    // The loopback server sends a row every 400 ms: the bytes show as they come.
    await expect(row.getByTestId('run-progress')).toContainText(/\d+ B downloaded/);
    await expect.poll(() => wsFrames.some((f) => f.includes('"feedRunProgress"') && /"downloaded":[1-9]/.test(f))).toBe(true);

    await row.getByRole('button', { name: 'Run now' }).click();
    await expect(page.getByText('the feed is already running; its run goes on')).toBeVisible();

    await expect(row.locator('.dot-success')).toBeVisible({ timeout: 30_000 });
    await expect(row.getByTestId('running')).toHaveCount(0);
    await expect(row.getByTestId('status-message')).toHaveText('Success');
  });

  test('filters by status', async () => {
    await page.goto(`${baseURL()}/feeds`);
    await page.getByRole('button', { name: 'Filters' }).click();
    const panel = page.getByRole('complementary', { name: 'Filters' });
    // Once the counts are in, the panel stops moving under the pointer.
    await expect(panel.getByText('Counting…')).toHaveCount(0);
    await expect(panel.getByRole('group', { name: 'Type', exact: true })).toBeVisible();
    // The checkbox follows the address, which changes just after the click.
    const error = panel.getByRole('group', { name: /^Status( Clear Status filter)?$/ }).getByRole('checkbox', { name: 'Error', exact: true });
    await error.click();
    await expect(error).toBeChecked();
    await expect(page).toHaveURL(/status=ERROR/);
    await expect(feedRow('TSV_partner_e2e')).toBeVisible();
    await expect(feedRow('TSV_slow_e2e')).toHaveCount(0);
    await expect(page.locator('table[aria-label="Feeds"] tbody tr .dot-success')).toHaveCount(0);
    await expect(page.getByRole('list', { name: 'Active filters' })).toContainText('Status: Error');
    await page.getByRole('button', { name: 'Remove filter Status Error' }).click();
    await expect(feedRow('TSV_slow_e2e')).toBeVisible();
    await page.getByRole('button', { name: 'Filters' }).click();
  });

  test('a feed that reached its daily cap says so on its row', async () => {
    await dismissToasts();
    await openCreate(page, 'Custom feed');
    const dialog = page.getByRole('dialog', { name: 'Create custom feed' });
    await dialog.getByText('TSV', { exact: true }).click();
    await dialog.getByLabel('Name', { exact: true }).fill('cap_e2e');
    await dialog.getByLabel('Collection URL').fill(tsvURL().replace('/feed.tsv', '/cap.tsv'));
    await dialog.getByRole('button', { name: 'Create feed' }).click();
    await expect(dialog).toHaveCount(0);
    await page.goto(`${baseURL()}/feeds?q=cap_e2e`);
    const row = feedRow('TSV_cap_e2e');
    await expect(row.getByTestId('daily-cap')).toHaveText(/^25,000 IoCs today; the rest from \d\d:\d\d UTC$/, { timeout: 60_000 });
    await expect(row.getByRole('cell').filter({ hasText: /^25,000$/ })).toHaveCount(1);

    // Its 25,000 IoCs would crowd the other suites' pages: it goes.
    await row.getByRole('button', { name: 'Delete TSV_cap_e2e' }).click();
    await page.getByRole('dialog').getByRole('button', { name: /delete/i }).click();
    await expect(row).toHaveCount(0);
  });
});

test.describe.serial('times', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('times show their zone, and "just now" moves on without a reload', async () => {
    // The page's clock is driven by the test: a minute passes at once.
    await page.clock.install();
    await page.goto(`${baseURL()}/feeds?q=slow_e2e`);
    const cell = feedRow('TSV_slow_e2e').locator('td.col-lastIngestion');
    await expect(cell.locator('time')).toContainText(/^\d{4}-\d\d-\d\d \d\d:\d\d (UTC|GMT[+-]\d+|[A-Z]{3,5})/);
    const before = await cell.getByTestId('relative-time').textContent();
    await page.clock.runFor(2 * 60_000);
    await expect(cell.getByTestId('relative-time')).not.toHaveText(before ?? '');
    await expect(cell.getByTestId('relative-time')).toHaveText(/min ago|h ago/);
  });
});

test.describe.serial('feed toggle', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('disabling a feed asks for confirmation', async () => {
    await page.goto(`${baseURL()}/feeds`);
    const toggle = feedRow(feedName).getByRole('switch');
    await toggle.click();
    const dialog = page.getByRole('dialog', { name: 'Disable feed?' });
    await expect(dialog).toBeVisible();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(toggle).toHaveAttribute('aria-checked', 'true');

    await toggle.click();
    await page.getByRole('dialog', { name: 'Disable feed?' }).getByRole('button', { name: 'Disable' }).click();
    await expect(toggle).toHaveAttribute('aria-checked', 'false');
    await expect(feedRow(feedName).getByTestId('status-message')).toHaveText('Disabled');
    await expect(feedRow(feedName).locator('.dot-disabled')).toBeVisible();
  });

});

test.describe.serial('tenants and groups', () => {
  test.beforeAll(async ({ browser }) => openPage(browser, true));
  test.afterAll(async () => page.close());

  test('creates tenants and a group, and edits its membership', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tenants' }).click();
    for (const name of ['Acme Corp', 'Globex']) {
      await page.getByRole('button', { name: '+ New tenant' }).click();
      const dialog = page.getByRole('dialog', { name: 'New tenant' });
      await dialog.getByLabel('Name', { exact: true }).fill(name);
      await dialog.getByLabel('Contact email').fill(`soc@${name.split(' ')[0].toLowerCase()}.example`);
      if (name === 'Acme Corp') {
        await dialog.getByLabel('Authentication method').selectOption('sso_saml');
        await expect(dialog.getByRole('group', { name: 'SSO configuration' })).toBeVisible();
        await dialog.getByLabel('Issuer URL').fill('https://idp.acme.example/saml');
        await dialog.getByLabel('SSO entry point').fill('https://idp.acme.example/sso');
      }
      await dialog.getByRole('button', { name: 'Create tenant' }).click();
      await expect(dialog).toHaveCount(0);
      await expect(page.locator(`tr[data-tenant-name="${name}"]`)).toBeVisible();
    }

    // Stored values are shown as words.
    await expect(page.locator('tr[data-tenant-name="Acme Corp"] td[data-label="Authentication"]')).toHaveText('SSO (SAML)');
    await expect(page.locator('tr[data-tenant-name="Globex"] td[data-label="Authentication"]')).toHaveText('System default');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tenant groups' }).click();
    const newGroup = page.getByRole('button', { name: '+ New group' });
    await newGroup.click();
    const dialog = page.getByRole('dialog', { name: 'New tenant group' });
    // The dialog opens on its first field.
    await expect(dialog.getByLabel('Name', { exact: true })).toBeFocused();
    await dialog.getByLabel('Name', { exact: true }).fill('EMEA');
    // A group needs a tenant: the server's refusal is shown in the form.
    await dialog.getByRole('button', { name: 'Create group' }).click();
    await expect(dialog.getByRole('alert').first()).toBeVisible();
    await dialog.getByRole('checkbox', { name: 'Acme Corp' }).check();
    await dialog.getByRole('button', { name: 'Create group' }).click();
    await expect(dialog).toHaveCount(0);
    const group = page.locator('tr[data-group-name="EMEA"]');
    await expect(group.getByTestId('group-members')).toHaveText('Acme Corp');

    // A tenant of another group: the form warns by names, the server's
    // refusal names the tenant and the group too; closing the dialog gives
    // focus back to the button that opened it.
    await newGroup.click();
    const second = page.getByRole('dialog', { name: 'New tenant group' });
    await second.getByLabel('Name', { exact: true }).fill('APAC');
    await second.getByRole('checkbox', { name: /Acme Corp/ }).check();
    await expect(second.getByTestId('members-taken')).toContainText('Acme Corp is in EMEA');
    await second.getByRole('button', { name: 'Create group' }).click();
    await expect(second.locator('.error-box')).toContainText('tenant "Acme Corp" is already in the group "EMEA"');
    await expect(second.locator('.error-box')).not.toContainText(/[0-9a-f]{8}-/);
    await second.getByRole('button', { name: 'Cancel' }).click();
    await expect(second).toHaveCount(0);
    await expect(newGroup).toBeFocused();

    await group.getByRole('button', { name: 'Edit EMEA' }).click();
    const edit = page.getByRole('dialog', { name: 'Edit group EMEA' });
    await page.keyboard.press('Escape');
    await expect(edit).toHaveCount(0);
    await expect(group.getByRole('button', { name: 'Edit EMEA' })).toBeFocused();
    await group.getByRole('button', { name: 'Edit EMEA' }).click();
    await edit.getByRole('checkbox', { name: 'Globex' }).check();
    await edit.getByRole('checkbox', { name: 'Acme Corp' }).uncheck();
    await edit.getByRole('button', { name: 'Save' }).click();
    await expect(edit).toHaveCount(0);
    await expect(group.getByTestId('group-members')).toHaveText('Globex');

    // Deleting the group asks first and leaves its tenants.
    await group.getByRole('button', { name: 'Delete EMEA' }).click();
    await page.getByRole('dialog', { name: 'Delete group?' }).getByRole('button', { name: 'Delete' }).click();
    await expect(group).toHaveCount(0);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tenants' }).click();
    await expect(page.locator('tr[data-tenant-name="Globex"]')).toBeVisible();
  });

  test('is usable on a narrow screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/tenants', '/groups', '/feeds', '/iocs']) {
      await page.goto(`${baseURL()}${path}`);
      await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
      await expect(page.getByRole('status')).toHaveCount(0); // loaded
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `horizontal overflow on ${path}`).toBeLessThanOrEqual(1);
    }
    await page.goto(`${baseURL()}/tenants`);
    // Rows become cards: every cell carries its column name.
    const row = page.locator('tr[data-tenant-name="Globex"]');
    await expect(row.locator('td[data-label="Name"]')).toBeVisible();
    await expect(page.getByRole('columnheader')).toHaveCount(0);
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  test('at 1280 px the Actions column is in view, with or without the filter panel', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    // A group to list (the previous test deleted its own).
    await page.goto(`${baseURL()}/groups`);
    await page.getByRole('button', { name: '+ New group' }).click();
    const dialog = page.getByRole('dialog', { name: 'New tenant group' });
    await dialog.getByLabel('Name', { exact: true }).fill('Wide');
    await dialog.getByRole('checkbox', { name: 'Globex' }).check();
    await dialog.getByRole('button', { name: 'Create group' }).click();
    await expect(dialog).toHaveCount(0);
    const actionsInView = async (where: string) => {
      const wrap = (await page.locator('.table-wrap').first().boundingBox())!;
      const cell = (await page.locator('td.col-actions').first().boundingBox())!;
      expect(cell.x, `Actions column left of the table's frame on ${where}`).toBeGreaterThanOrEqual(wrap.x - 1);
      expect(cell.x + cell.width, `Actions column past the table's frame on ${where}`).toBeLessThanOrEqual(wrap.x + wrap.width + 1);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect(overflow, `page wider than the window on ${where}`).toBeLessThanOrEqual(1);
    };
    for (const path of ['/tenants', '/groups', '/feeds']) {
      await page.goto(`${baseURL()}${path}`);
      await expect(page.locator('td.col-actions').first()).toBeVisible();
      await actionsInView(path);
    }
    await page.getByRole('button', { name: 'Filters' }).click();
    await expect(page.getByRole('complementary', { name: 'Filters' })).toBeVisible();
    await actionsInView('/feeds with the filter panel');
    // The IoCs table has no Actions column; its page must not scroll sideways either.
    await page.goto(`${baseURL()}/iocs`);
    await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, 'page wider than the window on /iocs').toBeLessThanOrEqual(1);
    await page.setViewportSize({ width: 1440, height: 900 });
  });
});

