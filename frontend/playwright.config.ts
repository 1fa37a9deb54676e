import { defineConfig } from '@playwright/test';

// Debian's Chromium, headless: this machine (and CI) reach only the npm
// registry, so Playwright's own browser downloads are not an option.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: './e2e',
  globalSetup: './e2e/global-setup.ts',
  // One server, one database: the flow builds on itself, so tests run in order.
  workers: 1,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 60_000,
  // The whole run: about 3 minutes on a quiet 2-core machine (axe on every page in both
  // themes takes half a minute of it), over 5 on a busy one. The bound is there to end a
  // hung run well inside CI's time, not to measure speed.
  globalTimeout: 900_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1440, height: 900 },
    screenshot: 'only-on-failure',
    trace: 'off',
    actionTimeout: 10_000,
    launchOptions: {
      executablePath: chromium,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
