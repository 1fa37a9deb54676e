import { expect, test, type Page } from '@playwright/test';
import { baseURL, expectNoAxeViolations, login, screenshot, sortFeed } from './fixtures';

// Dark mode: the system's colour scheme by default, or the one chosen in the
// top bar, remembered; every page passes axe (contrast included) in both.

const theme = (page: Page) => page.evaluate(() => document.documentElement.dataset.theme);
const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body.parentElement!).backgroundColor);
const darkBackground = 'rgb(14, 20, 34)';
const lightBackground = 'rgb(245, 247, 251)';

test.describe.serial('dark mode', () => {
  test('follows the system, and the toggle overrides it until set back to System', async ({ browser }) => {
    const context = await browser.newContext({ colorScheme: 'dark' });
    const page = await context.newPage();
    await login(page);
    const select = page.getByRole('combobox', { name: 'Theme' });
    await expect(select).toHaveValue('system');
    expect(await theme(page)).toBe('dark');
    expect(await background(page)).toBe(darkBackground);

    await select.selectOption('light');
    expect(await theme(page)).toBe('light');
    expect(await background(page)).toBe(lightBackground);
    await page.reload();
    await expect(page.getByRole('combobox', { name: 'Theme' })).toHaveValue('light');
    expect(await theme(page)).toBe('light');

    await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
    expect(await theme(page)).toBe('dark');
    // The system's setting changing is followed at once.
    await page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(() => theme(page)).toBe('light');
    await page.getByRole('combobox', { name: 'Theme' }).selectOption('dark');
    expect(await background(page)).toBe(darkBackground);
    await page.reload();
    expect(await theme(page)).toBe('dark');
    await context.close();
  });

  for (const scheme of ['light', 'dark'] as const) {
    test(`every page passes axe in the ${scheme} theme`, async ({ browser }) => {
      // One test walks every page with axe: its bound is the walk's, not one page's.
      test.setTimeout(180_000);
      const feedId = await sortFeed();
      const context = await browser.newContext({ colorScheme: scheme });
      const page = await context.newPage();
      await page.goto(`${baseURL()}/login`);
      expect(await theme(page)).toBe(scheme);
      await expectNoAxeViolations(page, `on the login page (${scheme})`);
      await login(page);
      const pages: [string, string][] = [
        ['/overview', 'Overview'],
        ['/feeds', 'Feeds'],
        [`/feeds/${feedId}`, 'TSV_sort_e2e'],
        ['/iocs', 'Indicators of compromise'],
        ['/tenants', 'Tenants'],
        ['/groups', 'Tenant groups'],
        ['/users', 'Users'],
        ['/account', 'Your account'],
      ];
      for (const [path, heading] of pages) {
        await page.goto(`${baseURL()}${path}`);
        await expect(page.getByRole('heading', { level: 1, name: heading })).toBeVisible();
        await expect(page.locator('.loading')).toHaveCount(0);
        await expectNoAxeViolations(page, `on ${path} (${scheme})`);
      }
      // A dialog and the indicator drawer too.
      await page.goto(`${baseURL()}/iocs?q=kilo.sort.example`);
      await page.locator('tr[data-ioc-value="kilo.sort.example"]').getByRole('button', { name: 'kilo.sort.example' }).click();
      await expect(page.getByRole('dialog', { name: 'Indicator' })).toBeVisible();
      await expectNoAxeViolations(page, `on the indicator drawer (${scheme})`);
      if (scheme === 'dark') {
        await page.keyboard.press('Escape');
        await page.goto(`${baseURL()}/overview`);
        await expect(page.getByTestId('chart-by-type')).toBeVisible();
        await page.mouse.move(0, 0);
        await page.evaluate(() => window.scrollTo(0, 0));
        await screenshot(page, 'overview-dark');
      }
      await context.close();
    });
  }
});
