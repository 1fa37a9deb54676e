import { expect, test, type Page } from '@playwright/test';
import { expectNoAxeViolations, graphql, login, screenshot, sortFeed, sortRows, tenantPassword, tenantUser, tsvURL } from './fixtures';

// The Overview page, everyone's start page, on seeded data: the sort feed's
// twelve indicators, a feed whose source fails and a disabled feed.

/** figures opens a chart's table of figures and returns its rows as {name: count}. */
async function figures(page: Page, chart: string): Promise<Record<string, number>> {
  const card = page.getByTestId(`chart-${chart}`);
  const details = card.locator('details.chart-table');
  if (!(await details.evaluate((d) => (d as HTMLDetailsElement).open))) await details.locator('summary').click();
  const rows = await card.locator('tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [tr.children[0].textContent ?? '', Number((tr.children[1].textContent ?? '').replace(/,/g, ''))] as const),
  );
  return Object.fromEntries(rows);
}

async function createFeed(name: string, path: string): Promise<string> {
  const found = await graphql<{ feeds: { nodes: { id: string; name: string }[] } }>('query ($q: String) { feeds(search: $q) { nodes { id name } } }', {
    q: name,
  });
  const have = found.feeds.nodes.find((f) => f.name === `TSV_${name}`);
  if (have) return have.id;
  const created = await graphql<{ createCustomFeed: { id: string } }>('mutation ($input: CustomFeedInput!) { createCustomFeed(input: $input) { id } }', {
    input: { category: 'TSV', name, collectionUrl: tsvURL().replace('/feed.tsv', path), pollingFrequency: 24, retentionPeriod: 30 },
  });
  return created.createCustomFeed.id;
}

test.describe.serial('the overview', () => {
  let page: Page;
  let failingId = '';
  test.beforeAll(async ({ browser }) => {
    await sortFeed();
    failingId = await createFeed('overview_gone_e2e', '/overview-gone.tsv');
    await graphql('mutation ($id: ID!) { runFeedNow(id: $id) { id } }', { id: failingId }).catch(() => undefined);
    const disabledId = await createFeed('overview_off_e2e', '/sort.tsv');
    await graphql('mutation ($id: ID!) { setFeedEnabled(id: $id, enabled: false, confirm: true) { id } }', { id: disabledId });
    // axe-core's runner needs a page of a context the test made.
    page = await (await browser.newContext()).newPage();
  });
  test.afterAll(async () => page.context().close());

  test('is where a root user lands, with the feeds at a glance', async () => {
    await login(page);
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
    const health = page.getByRole('table', { name: 'Feed health' });
    // The failing feed's run ends on its own; the table refreshes itself.
    await expect(health.locator('tr[data-feed-name="TSV_overview_gone_e2e"]')).toHaveAttribute('data-state', 'Failed', { timeout: 30_000 });
    const failed = health.locator('tr[data-feed-name="TSV_overview_gone_e2e"]');
    await expect(failed.locator('td[data-label="Message"]')).not.toHaveText(/^\s*$/);
    await expect(failed.locator('td[data-label="Next run"]')).toContainText(/^in /);
    const off = health.locator('tr[data-feed-name="TSV_overview_off_e2e"]');
    await expect(off).toHaveAttribute('data-state', 'Disabled');
    await expect(off.locator('td[data-label="Next run"]')).toHaveText('—');
    await expect(health.locator('tr[data-feed-name="TSV_sort_e2e"]')).toHaveAttribute('data-state', /OK|Running/);
    await expect(page.getByTestId('feed-health-counts')).toContainText(/\d+ failed/);
    await failed.getByRole('link', { name: 'TSV_overview_gone_e2e' }).click();
    await expect(page).toHaveURL(new RegExp(`/feeds/${failingId}$`));
    await page.goBack();
  });

  test('counts the indicators as the API does, each linking to its filtered list', async () => {
    const api = await graphql<{ all: { totalCount: number }; domains: { totalCount: number } }>(
      '{ all: iocs { totalCount } domains: iocs(filter: { type: [DOMAIN] }) { totalCount } }',
    );
    // Ingestion by other tests may have moved the figures since the page
    // read them: reload until the page and the API agree.
    await expect(async () => {
      await page.reload();
      await expect(page.getByTestId('stat-iocs')).toHaveText(api.all.totalCount.toLocaleString('en'), { timeout: 2_000 });
    }).toPass({ timeout: 20_000 });
    expect((await figures(page, 'by-type'))['Domain']).toBe(api.domains.totalCount);
    expect((await figures(page, 'by-feed'))['TSV_sort_e2e']).toBe(sortRows.length);
    // Every TSV indicator carries the feed kind's tag.
    expect((await figures(page, 'top-tags'))['emerging_threat']).toBeGreaterThanOrEqual(sortRows.length);
    const added = await figures(page, 'per-day');
    const today = new Date().toISOString().slice(0, 10);
    expect(added[today]).toBeGreaterThanOrEqual(sortRows.length);
    expect(Number((await page.getByTestId('stat-added').textContent())?.replace(/,/g, ''))).toBeGreaterThanOrEqual(sortRows.length);
    // Nothing of the seeded data expires within 7 days (30 days' retention).
    await expect(page.getByTestId('stat-expiring')).toHaveText('0');
    expect(Object.keys(await figures(page, 'expiring'))).toHaveLength(7);

    await page.getByTestId('chart-by-type').getByRole('link', { name: 'Domain' }).click();
    await expect(page).toHaveURL(/\/iocs\?type=DOMAIN$/);
    await expect(page.locator('tr[data-ioc-value="kilo.sort.example"]')).toBeVisible();
    await page.goBack();
    await figures(page, 'top-tags');
    await page.getByTestId('chart-top-tags').getByRole('link', { name: 'emerging_threat' }).click();
    await expect(page).toHaveURL(/\/iocs\?tag=emerging_threat$/);
    await page.goBack();
    await expect(page.getByRole('heading', { level: 1, name: 'Overview' })).toBeVisible();
  });

  test('describes every chart to assistive technology, and axe finds no violation', async () => {
    for (const chart of ['by-type', 'by-feed', 'per-day', 'expiring', 'top-tags']) {
      const img = page.getByTestId(`chart-${chart}`).getByRole('img');
      await expect(img).toHaveAttribute('aria-label', /\S/);
    }
    await expect(page.getByTestId('chart-by-type').getByRole('img')).toHaveAttribute('aria-label', /Domain \d+/);
    await expectNoAxeViolations(page, 'on the overview');
    await page.mouse.move(0, 0);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.evaluate(() => document.querySelectorAll('details.chart-table').forEach((d) => ((d as HTMLDetailsElement).open = false)));
    await screenshot(page, 'overview');
  });
});

test.describe.serial('the overview of a tenant-scoped user', () => {
  test('shows the indicator figures only, without asking for feed health', async ({ browser }) => {
    await sortFeed();
    const page = await (await browser.newContext()).newPage();
    const errors: string[] = [];
    page.on('response', async (res) => {
      if (!res.url().endsWith('/graphql') || res.request().method() !== 'POST') return;
      const body = (await res.json().catch(() => null)) as { errors?: { message: string }[] } | null;
      for (const e of body?.errors ?? []) errors.push(e.message);
    });
    await login(page, tenantUser, tenantPassword);
    await expect(page).toHaveURL(/\/overview$/);
    await expect(page.getByTestId('chart-by-feed')).toBeVisible();
    await expect(async () => {
      await page.reload();
      expect((await figures(page, 'by-feed'))['TSV_sort_e2e']).toBe(sortRows.length);
    }).toPass({ timeout: 20_000 });
    await expect(page.getByRole('heading', { name: 'Feed health' })).toHaveCount(0);
    // Feed pages and the feed filter are root-only: the tenant's figures link to neither.
    await expect(page.locator('a[href^="/feeds"]')).toHaveCount(0);
    await expect(page.getByTestId('chart-by-feed').getByRole('link')).toHaveCount(0);
    await figures(page, 'by-type');
    await expect(page.getByTestId('chart-by-type').getByRole('link', { name: 'Domain' })).toHaveAttribute('href', '/iocs?type=DOMAIN');
    await expectNoAxeViolations(page, 'on a tenant overview');
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
