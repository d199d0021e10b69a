import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

// Debian's Chromium, headless, driven by playwright-core (which never
// downloads a browser of its own). `.ci/run` installs the package.

export const CHROMIUM_PATH = process.env.MAILROOM_TEST_CHROMIUM ?? '/usr/bin/chromium';

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`No Chromium at ${CHROMIUM_PATH}: install Debian's chromium package (bash .ci/run packages) or set MAILROOM_TEST_CHROMIUM`);
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Nothing may reach out from this machine: no background fetches, no QUIC probes.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/**
 * A desktop-sized page of the dashboard at `url`, signed in with `token`,
 * opened on `route` once its heading `heading` shows. `beforeSignIn` readies
 * the page first (routes the network, say).
 */
export async function signedInDashboard(browser: Browser, url: string, token: string, route: string, heading: string,
  beforeSignIn?: (page: Page) => Promise<void>): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.setDefaultTimeout(10_000);
  await beforeSignIn?.(page);
  await page.goto(`${url}/dashboard/#${route}`);
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  return page;
}
