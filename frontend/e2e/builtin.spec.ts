import { expect, test, type Page } from '@playwright/test';
import { baseURL, login } from './fixtures';

// The eight built-in feeds as `tifeeds serve` delivers them, with the icon
// name the server gives each (the dashboard draws each as an SVG). The
// server runs without any key setting, so OTX (whose key is required) shows
// its missing key; the others need none.
const builtins: [name: string, icon: string][] = [
  ['Emerging Threats', 'radar'],
  ['Government Feed', 'landmark'],
  ['IDS Rules', 'shield'],
  ['IP and Domain Reputation', 'gauge'],
  ['Malware URL and SSL Certificates', 'certificate'],
  ['Open Threat Exchange', 'exchange'],
  ['Phishing URL Database', 'database'],
  ['Phishing URL Feed', 'fish'],
];
const otxSetting = '--otx-api-key (TIFEEDS_OTX_API_KEY)';

let page: Page;

function feedRow(name: string) {
  return page.locator(`tr[data-feed-name="${name}"]`);
}

test.describe.serial('built-in feeds', () => {
  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage();
    page.on('pageerror', (err) => console.log(`page error: ${err.message}`));
    await login(page);
  });
  test.afterAll(async () => page.close());

  test('the table lists the eight built-in feeds with their icons, and no Edit, Delete or Reset', async () => {
    await page.goto(`${baseURL()}/feeds?type=BUILTIN&sort=NAME:ASC`);
    await expect(page.locator('tr[data-feed-name]')).toHaveCount(builtins.length);
    await expect
      .poll(() => page.locator('tr[data-feed-name]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-feed-name'))))
      .toEqual(builtins.map(([n]) => n));
    for (const [name, icon] of builtins) {
      const row = feedRow(name);
      const badge = row.getByRole('img', { name: `${name} icon` });
      await expect(badge).toHaveAttribute('data-icon', icon);
      // Drawn, not a font glyph: an SVG with its own path.
      await expect(badge.locator('svg path')).toHaveAttribute('d', /^M/);
      await expect(row.getByRole('button', { name: 'Run now' })).toBeVisible();
      await expect(row.getByRole('button', { name: `Edit ${name}` })).toHaveCount(0);
      await expect(row.getByRole('button', { name: `Delete ${name}` })).toHaveCount(0);
      await expect(row.getByRole('button', { name: `Reset premium feed ${name}` })).toHaveCount(0);
      await expect(row.getByRole('button', { name: /^(Edit|Delete|Reset)/ })).toHaveCount(0);
      await expect(row).toContainText('24 hours');
    }
  });

  test('a missing key is shown with its setting, and only there', async () => {
    await expect(feedRow('Open Threat Exchange').getByTestId('missing-key')).toContainText(otxSetting);
    await expect(page.getByTestId('missing-key')).toHaveCount(1);
    // Its runs fail before asking OTX, naming the same setting.
    await expect(feedRow('Open Threat Exchange').getByTestId('status-message')).toHaveText('Invalid Credentials');
  });

  test('the feed page says what the feed needs and offers no Edit, Delete or Reset', async () => {
    await feedRow('Open Threat Exchange').getByRole('link', { name: 'Open Threat Exchange' }).click();
    await expect(page.getByRole('heading', { name: 'Open Threat Exchange' })).toBeVisible();
    await expect(page.getByTestId('feed-needs')).toContainText(otxSetting);
    await expect(page.getByRole('img', { name: 'Open Threat Exchange icon' }).locator('svg path')).toHaveAttribute('d', /^M/);
    await expect(page.getByRole('button', { name: /^(Edit|Delete|Reset)/ })).toHaveCount(0);

    await page.goto(`${baseURL()}/feeds?type=BUILTIN&sort=NAME:ASC`);
    await feedRow('IDS Rules').getByRole('link', { name: 'IDS Rules' }).click();
    await expect(page.getByTestId('feed-needs')).toHaveText('Needs: Nothing: the service is public.');
    await expect(page.getByRole('button', { name: /^(Edit|Delete|Reset)/ })).toHaveCount(0);
  });

  test('every built-in feed fetched through the loopback mirror, none from its vendor', async () => {
    const mirror = process.env.TIFEEDS_E2E_MIRROR_URL;
    if (!mirror) throw new Error('TIFEEDS_E2E_MIRROR_URL is not set: global-setup did not run');
    // Each first run started with the server; OTX, without its key, asks nothing.
    const want = ['data.phishtank.com', 'openphish.com', 'rules.emergingthreats.net', 'threatfox.abuse.ch', 'urlhaus.abuse.ch', 'www.circl.lu'];
    await expect
      .poll(async () => ((await (await fetch(`${mirror}/__mirror/hosts`)).json()) as string[]).filter((h) => want.includes(h)))
      .toEqual(want);
    const hosts = (await (await fetch(`${mirror}/__mirror/hosts`)).json()) as string[];
    expect(hosts).not.toContain('otx.alienvault.com');
  });
});
