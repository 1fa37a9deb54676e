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

/** slowRows is how many rows /slow.tsv sends, one every 400 ms. */
export const slowRows = 10;

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

/** login signs in through the login page and waits for the signed-in user. */
export async function login(page: Page): Promise<void> {
  await page.goto(`${baseURL()}/feeds`);
  await expect(page).toHaveURL(/\/login/);
  await page.getByLabel('Username').fill(adminUser);
  await page.getByLabel('Password').fill(adminPassword);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('signed-in-user')).toContainText(adminUser);
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
