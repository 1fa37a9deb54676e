import { expect, type Locator, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const adminUser = 'admin';
export const adminPassword = 'e2e-Admin-Passw0rd';

/** tsvRows is the local TSV feed: four good rows of every kind and one malformed row. */
export const tsvRows: string[][] = [
  ['ip', '203.0.113.7', 'botnet_x', '90'],
  ['domain', 'evil.example.com', 'phish-kit', '75'],
  ['url', 'http://malware.example.net/payload.exe', 'dropper_7', '80'],
  ['sha256-hash', 'a'.repeat(64), 'ransom_y', '100'],
  ['ip', 'not-an-ip', 'broken', '90'],
];

/** The tenant-scoped user global-setup creates, with its tenant. */
export const tenantName = 'Initech E2E';
export const tenantUser = 'initech_analyst';
export const tenantPassword = 'e2e-Tenant-Passw0rd';

/** adminAPIKey is the first-run admin's API key global-setup gives tifeeds. */
export const adminAPIKey = 'tif_e2e_key_0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * sortRows is /sort.tsv: twelve indicators of five kinds with distinct
 * scores, for the IoC table's sorting and paging. Highest score: kilo (99),
 * lowest: the f… MD5 (1); first value: 198.18.0.1, last: zulu.
 */
export const sortRows: [string, string, number][] = [
  ['ip', '198.18.0.1', 91],
  ['ip', '198.18.0.2', 12],
  ['domain', 'alpha.sort.example', 45],
  ['domain', 'mike.sort.example', 5],
  ['domain', 'zulu.sort.example', 67],
  ['url', 'http://bravo.sort.example/a', 88],
  ['url', 'http://yankee.sort.example/b', 23],
  ['sha256-hash', 'c'.repeat(64), 56],
  ['sha256-hash', 'd'.repeat(64), 34],
  ['md5-hash', 'e'.repeat(32), 78],
  ['md5-hash', 'f'.repeat(32), 1],
  ['domain', 'kilo.sort.example', 99],
];

/** slowRows is how many rows /slow.tsv sends, one every 400 ms. */
export const slowRows = 10;

/** capRows is how many rows /cap.tsv sends: past a TSV feed's daily cap of 25,000. */
export const capRows = 25_010;

/** baseURL is where global-setup started tifeeds. */
export function baseURL(): string {
  const u = process.env.TIFEEDS_E2E_URL;
  if (!u) throw new Error('TIFEEDS_E2E_URL is not set: global-setup did not run');
  return u;
}

export function tsvURL(): string {
  const u = process.env.TIFEEDS_E2E_TSV_URL;
  if (!u) throw new Error('TIFEEDS_E2E_TSV_URL is not set: global-setup did not run');
  return u;
}

/** login signs in through the login page (as the admin by default) and waits for the signed-in user. */
export async function login(page: Page, user = adminUser, password = adminPassword): Promise<void> {
  await page.goto(`${baseURL()}/login`);
  await expect(page).toHaveURL(/\/login/);
  await page.getByLabel('Username').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('signed-in-user')).toContainText(user);
}

/** graphql sends one operation as the admin, with its API key (HTTP basic auth), and returns data or throws. */
export async function graphql<T = Record<string, unknown>>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  return adminGraphQL<T>(baseURL(), query, variables);
}

export async function adminGraphQL<T>(url: string, query: string, variables: Record<string, unknown>): Promise<T> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Authorization: `Basic ${Buffer.from(`${adminUser}:${adminAPIKey}`).toString('base64')}`,
    },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (!res.ok || body.errors?.length || !body.data) throw new Error(`GraphQL ${res.status}: ${JSON.stringify(body.errors ?? body)}`);
  return body.data;
}

/**
 * openCreate opens the feeds page's Create menu and picks an entry
 * ("Custom feed" or "Premium feed"), as the spec's Create then ... does.
 */
export async function openCreate(page: Page, entry: 'Custom feed' | 'Premium feed'): Promise<void> {
  await page.getByText('+ Create', { exact: true }).click();
  await page.getByRole('group', { name: 'Create feed' }).getByRole('button', { name: entry }).click();
}

/**
 * screenshotDir is where the tests write their screenshots: test-results/
 * (ignored by git) unless TIFEEDS_SCREENSHOTS names another directory, as
 * `make screenshots` does with docs/screenshots to update the README's on
 * purpose. A plain test run so never changes a committed file.
 */
export function screenshotDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return resolve(here, '..', process.env.TIFEEDS_SCREENSHOTS || 'test-results/screenshots');
}

/** screenshot saves what target shows as <screenshotDir>/<name>.png. */
export async function screenshot(target: Page | Locator, name: string): Promise<void> {
  const dir = screenshotDir();
  mkdirSync(dir, { recursive: true });
  const path = resolve(dir, `${name}.png`);
  if ('goto' in target) await target.screenshot({ path, fullPage: false });
  else await target.screenshot({ path });
}

/**
 * sortFeed makes sure the feed of /sort.tsv exists and has ingested its
 * twelve indicators, creating and running it through the API the first
 * time; it returns the feed's id. Tests that need IoCs of their own use it,
 * so they do not depend on another file's tests having run.
 */
export async function sortFeed(): Promise<string> {
  const name = 'TSV_sort_e2e';
  const found = await graphql<{ feeds: { nodes: { id: string; name: string }[] } }>(
    'query ($q: String) { feeds(search: $q) { nodes { id name } } }',
    { q: name },
  );
  let id = found.feeds.nodes.find((f) => f.name === name)?.id;
  if (!id) {
    const created = await graphql<{ createCustomFeed: { id: string } }>(
      'mutation ($input: CustomFeedInput!) { createCustomFeed(input: $input) { id } }',
      {
        input: {
          category: 'TSV',
          name: 'sort_e2e',
          collectionUrl: tsvURL().replace('/feed.tsv', '/sort.tsv'),
          pollingFrequency: 24,
          retentionPeriod: 30,
          description: 'Indicators for the IoC table tests',
        },
      },
    );
    id = created.createCustomFeed.id;
    // A new enabled feed may already be on its first run: then this refuses, harmlessly.
    await graphql('mutation ($id: ID!) { runFeedNow(id: $id) { id } }', { id }).catch(() => undefined);
  }
  const feedId = id;
  await expect
    .poll(
      async () =>
        (await graphql<{ iocs: { totalCount: number } }>('query ($f: IocFilter) { iocs(filter: $f) { totalCount } }', { f: { feedId } }))
          .iocs.totalCount,
      { timeout: 30_000 },
    )
    .toBe(sortRows.length);
  return feedId;
}

/** expectNoAxeViolations runs axe-core on what the page shows and fails on any violation, listing them. */
export async function expectNoAxeViolations(page: Page, context = ''): Promise<void> {
  const { default: AxeBuilder } = await import('@axe-core/playwright');
  const results = await new AxeBuilder({ page }).analyze();
  const found = results.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(' | ')}`);
  expect(found, `axe violations ${context}`).toEqual([]);
}
