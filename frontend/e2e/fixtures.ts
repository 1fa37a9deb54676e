import { expect, type Page } from '@playwright/test';

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
