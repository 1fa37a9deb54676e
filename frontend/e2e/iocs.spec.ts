import { expect, test, type Page } from '@playwright/test';
import { baseURL, login, sortFeed, sortRows } from './fixtures';

// The IoC table: its order (newest first unless chosen), the columns it
// sorts by, rows per page, filters out of range, and the detail drawer's
// copy buttons. Its indicators are the twelve of /sort.tsv (sortFeed).
let page: Page;
let feedId: string;

const table = () => page.getByRole('table', { name: 'Indicators' });
const values = () => table().locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-ioc-value')));
const header = (name: string) => table().getByRole('columnheader', { name: new RegExp(`^${name}`) });
const byScore = [...sortRows].sort((a, b) => b[2] - a[2]).map((r) => r[1]);

test.describe.serial('the IoCs table', () => {
  test.beforeAll(async ({ browser }) => {
    feedId = await sortFeed();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    // Copy writes to the clipboard; reading it back needs the permission.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseURL() });
    page = await context.newPage();
    page.on('pageerror', (err) => console.log(`page error: ${err.message}`));
    await login(page);
  });
  test.afterAll(async () => page.context().close());

  test('shows first and last seen, newest first by default', async () => {
    await page.goto(`${baseURL()}/iocs`);
    await expect(table()).toBeVisible();
    for (const name of ['Type', 'Value', 'Score', 'First Seen', 'Last Seen', 'Expiration Date'])
      await expect(header(name)).toBeVisible();
    // The default order is the most recently seen first, and says so.
    await expect(header('Last Seen')).toHaveAttribute('aria-sort', 'descending');
    await expect(page).not.toHaveURL(/sort=/);
    const seen = await table()
      .locator('tbody td[data-label="Last Seen"] time')
      .evaluateAll((ts) => ts.map((t) => Date.parse(t.getAttribute('datetime') ?? '')));
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.every((t) => !Number.isNaN(t))).toBe(true);
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    const first = table().locator('tbody tr').first();
    await expect(first.locator('td[data-label="First Seen"] time')).toHaveAttribute('datetime', /^\d{4}-\d\d-\d\dT/);
  });

  test('sorts by score, value, type, first seen and expiry, both ways, from the headers', async () => {
    await page.goto(`${baseURL()}/iocs?feed=${feedId}`);
    await expect(table().locator('tbody tr')).toHaveCount(sortRows.length);

    // Score: highest first on the first click, then lowest first.
    await header('Score').getByRole('button').click();
    await expect(header('Score')).toHaveAttribute('aria-sort', 'descending');
    await expect(page).toHaveURL(/sort=SCORE%3ADESC|sort=SCORE:DESC/);
    await expect.poll(values).toEqual(byScore);
    await expect(header('Last Seen')).not.toHaveAttribute('aria-sort');
    await header('Score').getByRole('button').click();
    await expect(header('Score')).toHaveAttribute('aria-sort', 'ascending');
    await expect.poll(values).toEqual([...byScore].reverse());

    // Value: A to Z first.
    await header('Value').getByRole('button').click();
    await expect(header('Value')).toHaveAttribute('aria-sort', 'ascending');
    const byValue = sortRows.map((r) => r[1]).sort();
    await expect.poll(values).toEqual(byValue);
    await header('Value').getByRole('button').click();
    await expect.poll(values).toEqual([...byValue].reverse());

    // Type: the kinds come grouped (each in one run of rows), and in the
    // reverse order of runs on the second click.
    const runs = async () => {
      const k = await table().locator('tbody td[data-label="Type"]').allInnerTexts();
      return k.filter((x, i) => i === 0 || k[i - 1] !== x);
    };
    await header('Type').getByRole('button').click();
    await expect(header('Type')).toHaveAttribute('aria-sort', 'ascending');
    await expect.poll(async () => (await runs()).length, { message: 'each kind in one run' }).toBe(5);
    const groups = await runs();
    await header('Type').getByRole('button').click();
    await expect(header('Type')).toHaveAttribute('aria-sort', 'descending');
    await expect.poll(runs).toEqual([...groups].reverse());

    // First seen: latest first, then earliest. The feed's indicators came
    // in one run, so they tie on the time and go by id: the second click
    // gives exactly the reverse rows.
    await header('First Seen').getByRole('button').click();
    await expect(header('First Seen')).toHaveAttribute('aria-sort', 'descending');
    await expect(page).toHaveURL(/sort=FIRST_SEEN%3ADESC|sort=FIRST_SEEN:DESC/);
    await expect(header('Type')).not.toHaveAttribute('aria-sort');
    const firstSeen = () =>
      table()
        .locator('tbody td[data-label="First Seen"] time')
        .evaluateAll((ts) => ts.map((t) => Date.parse(t.getAttribute('datetime') ?? '')));
    await expect.poll(async () => (await firstSeen()).length).toBe(sortRows.length);
    const seen = await firstSeen();
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    const latestFirst = await values();
    await header('First Seen').getByRole('button').click();
    await expect(header('First Seen')).toHaveAttribute('aria-sort', 'ascending');
    await expect(page).toHaveURL(/sort=FIRST_SEEN%3AASC|sort=FIRST_SEEN:ASC/);
    await expect.poll(values).toEqual([...latestFirst].reverse());

    // Expiry: latest first, then soonest; the order survives a reload.
    await header('Expiration Date').getByRole('button').click();
    await expect(header('Expiration Date')).toHaveAttribute('aria-sort', 'descending');
    await page.reload();
    await expect(header('Expiration Date')).toHaveAttribute('aria-sort', 'descending');
    await expect(table().locator('tbody tr')).toHaveCount(sortRows.length);
  });

  test('chooses how many rows a page shows', async () => {
    await page.goto(`${baseURL()}/iocs?feed=${feedId}&sort=SCORE:DESC`);
    await expect(table().locator('tbody tr')).toHaveCount(sortRows.length);
    const pager = page.getByRole('navigation', { name: 'Pagination' });
    await pager.getByLabel('Rows').selectOption('10');
    await expect(table().locator('tbody tr')).toHaveCount(10);
    await expect(pager).toContainText(`1–10 of ${sortRows.length}`);
    await expect.poll(values).toEqual(byScore.slice(0, 10));
    await pager.getByRole('button', { name: 'Next ›' }).click();
    await expect.poll(values).toEqual(byScore.slice(10));
    await expect(pager).toContainText(`11–${sortRows.length} of ${sortRows.length}`);
    await pager.getByRole('button', { name: '‹ Previous' }).click();
    await expect(table().locator('tbody tr')).toHaveCount(10);
  });

  test('says when a filter is out of range instead of clamping it', async () => {
    await page.goto(`${baseURL()}/iocs?feed=${feedId}`);
    await expect(table().locator('tbody tr')).toHaveCount(sortRows.length);
    const minScore = page.getByLabel('Min score');
    await minScore.fill('150');
    await expect(minScore).toHaveAttribute('aria-invalid', 'true');
    await expect(page.locator('.field-error', { hasText: 'Min score must be a whole number from 0 to 100; 150 is not.' })).toBeVisible();
    // Not clamped to 100 (which would show nothing): no table at all until corrected.
    await expect(table()).toHaveCount(0);
    await expect(page.getByTestId('filter-problems')).toContainText('150 is not');
    await expect(page).toHaveURL(/minScore=150/);

    await minScore.fill('90');
    await expect(minScore).not.toHaveAttribute('aria-invalid', 'true');
    const high = sortRows.filter((r) => r[2] >= 90).map((r) => r[1]);
    await expect.poll(async () => (await values()).sort()).toEqual(high.sort());

    // An empty expiry range is refused the same way.
    await minScore.fill('');
    const local = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Expires after').fill(local(new Date(Date.now() + 20 * 86_400_000)));
    await page.getByLabel('Expires before').fill(local(new Date(Date.now() + 10 * 86_400_000)));
    await expect(page.getByLabel('Expires before')).toHaveAttribute('aria-invalid', 'true');
    await expect(page.locator('.field-error', { hasText: 'Expires before must be later than Expires after' })).toBeVisible();
    await expect(table()).toHaveCount(0);
    await page.getByRole('button', { name: 'Clear all' }).click();
    await expect(table().locator('tbody tr').first()).toBeVisible();
  });

  test('copies an indicator from its drawer, as it is or defanged', async () => {
    await page.goto(`${baseURL()}/iocs?feed=${feedId}&q=bravo`);
    const value = 'http://bravo.sort.example/a';
    await table().locator(`tr[data-ioc-value="${value}"]`).getByRole('button', { name: value }).click();
    const drawer = page.getByRole('dialog', { name: 'Indicator' });
    await expect(drawer.getByTestId('ioc-value')).toHaveText(value);
    const copy = drawer.getByRole('group', { name: 'Copy the indicator' });
    await copy.getByRole('button', { name: 'Copy', exact: true }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(value);
    await copy.getByRole('button', { name: 'Copy defanged' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe('hxxp://bravo[.]sort[.]example/a');
    await page.keyboard.press('Escape');

    // A hash has nothing to defang: only Copy.
    await page.goto(`${baseURL()}/iocs?feed=${feedId}&q=${'e'.repeat(32)}`);
    await table().getByRole('button', { name: 'e'.repeat(32) }).click();
    await expect(drawer.getByRole('button', { name: 'Copy', exact: true })).toBeVisible();
    await expect(drawer.getByRole('button', { name: 'Copy defanged' })).toHaveCount(0);
    await page.keyboard.press('Escape');
  });
});
