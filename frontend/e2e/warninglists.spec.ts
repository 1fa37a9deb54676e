import { expect, test, type Page } from '@playwright/test';
import { baseURL, login, sortFeed } from './fixtures';

// The warninglists on the Allowlist page: an action changed reaches the
// stored indicators (198.18.0.1 and .2 of /sort.tsv are in rfc5735's
// benchmarking range, which flags by default), and a list of one's own
// imported as text flags an indicator, whose warning the IoC table shows.
let page: Page;

const listRow = (name: string) => page.locator(`tr[data-list-name="${name}"]`);
const iocRow = (value: string) => page.getByRole('table', { name: 'Indicators' }).locator(`tr[data-ioc-value="${value}"]`);

async function openAllowlist() {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Allowlist' }).click();
  await expect(page.getByRole('heading', { level: 2, name: 'Warninglists' })).toBeVisible();
}

async function flaggedOnly() {
  await page.goto(`${baseURL()}/iocs?warnings=FLAGGED`);
  await expect(page.getByLabel('Warnings')).toHaveValue('FLAGGED');
}

test.describe.serial('the warninglists', () => {
  test.beforeAll(async ({ browser }) => {
    await sortFeed();
    page = await browser.newPage();
    await login(page);
  });
  test.afterAll(async () => page.close());

  test('a flagged indicator shows its warning, and turning the list off unflags it', async () => {
    await flaggedOnly();
    await expect(iocRow('198.18.0.1').locator('.tag-warning')).toHaveText('rfc5735');
    await expect(iocRow('kilo.sort.example')).toHaveCount(0);

    await openAllowlist();
    const action = listRow('rfc5735').getByLabel('Action of rfc5735');
    await expect(action).toHaveValue('FLAG');
    await action.selectOption('OFF');
    await expect(page.getByText('rfc5735 now offs')).toBeVisible();
    await expect(action).toHaveValue('OFF');
    await flaggedOnly();
    await expect(page.getByText(/of \d+ indicators?/)).toBeVisible();
    await expect(iocRow('198.18.0.1')).toHaveCount(0);
    await expect(iocRow('198.18.0.2')).toHaveCount(0);

    await openAllowlist();
    await listRow('rfc5735').getByLabel('Action of rfc5735').selectOption('FLAG');
    await expect(listRow('rfc5735').getByLabel('Action of rfc5735')).toHaveValue('FLAG');
  });

  test('imports a list that flags, refusing a bad line first, then deletes it', async () => {
    await openAllowlist();
    await page.getByRole('button', { name: 'Import list' }).click();
    const dialog = page.getByRole('dialog', { name: 'Import warninglist' });
    await dialog.getByLabel('Name').fill('e2e-sort');
    await dialog.getByLabel('Action').selectOption('FLAG');
    await dialog.getByLabel('Content').fill('kilo.sort.example\nnot an entry\n');
    await dialog.getByRole('button', { name: 'Import' }).click();
    await expect(dialog.getByText(/line 2/)).toBeVisible();
    await dialog.getByLabel('Content').fill('# sorted\nkilo.sort.example\n');
    await dialog.getByRole('button', { name: 'Import' }).click();
    await expect(dialog).toBeHidden();
    await expect(listRow('e2e-sort')).toContainText('Imported');
    await expect(listRow('e2e-sort')).toContainText('mixed');

    await flaggedOnly();
    await expect(iocRow('kilo.sort.example').locator('.tag-warning')).toHaveText('e2e-sort');
    await expect(iocRow('kilo.sort.example').locator('.tag-warning')).toHaveAttribute('title', 'e2e-sort: kilo.sort.example');

    await openAllowlist();
    await listRow('e2e-sort').getByRole('button', { name: 'Delete e2e-sort' }).click();
    await page.getByRole('dialog', { name: 'Delete warninglist?' }).getByRole('button', { name: 'Delete' }).click();
    await expect(listRow('e2e-sort')).toHaveCount(0);
    await flaggedOnly();
    await expect(iocRow('kilo.sort.example')).toHaveCount(0);
  });
});
