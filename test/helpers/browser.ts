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
 * A fixed-offset zone in which the clock now reads 10 or 11 o'clock, for
 * layout tests: a time is widest with a two-digit hour, so a list that fits
 * in this zone fits at any hour of the day the test runs.
 */
export function twoDigitHourZone(now = new Date()): string {
  let offset = 10 - now.getUTCHours();
  if (offset < -12) offset += 24;
  // The Etc zones count the other way: Etc/GMT-3 is three hours ahead of UTC.
  return offset === 0 ? 'Etc/UTC' : `Etc/GMT${offset > 0 ? '-' : '+'}${Math.abs(offset)}`;
}

/**
 * Watches `page`'s requests from now on; the function returned waits until
 * none has been in flight for `quietMs`. Playwright's own `networkidle` is
 * not used: with a preview's `srcdoc` frame it at times never comes.
 */
export function watchRequests(page: Page): (quietMs?: number, timeoutMs?: number) => Promise<void> {
  const inFlight = new Set<unknown>();
  let lastChange = Date.now();
  const settled = (request: unknown) => { inFlight.delete(request); lastChange = Date.now(); };
  page.on('request', (request) => { inFlight.add(request); lastChange = Date.now(); });
  page.on('requestfinished', settled);
  page.on('requestfailed', settled);
  return async (quietMs = 500, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (inFlight.size > 0 || Date.now() - lastChange < quietMs) {
      if (Date.now() > deadline) throw new Error(`Requests still in flight after ${timeoutMs} ms: ${inFlight.size}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
}

/** How a page of the dashboard is opened: a desktop's window (1440 by 900) in the machine's zone unless told. */
export interface DashboardPageOptions {
  viewport?: { width: number; height: number };
  timezoneId?: string;
  locale?: string;
  /** Readies the page before it signs in (routes the network, say). */
  beforeSignIn?: (page: Page) => Promise<unknown>;
}

/** A page of the dashboard at `url`, signed in with `token`, opened on `route` once its heading `heading` shows. */
export async function signedInDashboard(browser: Browser, url: string, token: string, route: string, heading: string,
  { viewport = { width: 1440, height: 900 }, timezoneId, locale, beforeSignIn }: DashboardPageOptions = {}): Promise<Page> {
  const page = await browser.newPage({ viewport, timezoneId, locale });
  page.setDefaultTimeout(10_000);
  await beforeSignIn?.(page);
  await page.goto(`${url}/dashboard/#${route}`);
  await page.getByLabel('API key').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
  return page;
}

/** Goes to `route` of the dashboard at `url` (signed in) and waits for its heading `heading`. */
export async function openView(page: Page, url: string, route: string, heading: string | RegExp): Promise<void> {
  await page.goto(`${url}/dashboard/#${route}`);
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

/** Goes to `route` of the dashboard at `url` (signed in) and waits until its view is drawn, whatever its heading. */
export async function openDrawnView(page: Page, url: string, route: string): Promise<void> {
  await page.goto(`${url}/dashboard/#${route}`);
  await page.locator('main h1').first().waitFor();
  await page.waitForFunction(() => !(globalThis as unknown as { document: { body: { textContent: string } } }).document.body.textContent.includes('Loading…'));
}

/** Waits until the note above the view says `text`. */
export function noteSays(page: Page, text: string | RegExp): Promise<void> {
  return page.locator('#note[role="status"]').filter({ hasText: text }).waitFor();
}

/** Waits until an element matching `selector` (in `within`, a page or a frame) holds `text`. */
export function textShows(within: Pick<Page, 'locator'>, selector: string, text: string | RegExp): Promise<void> {
  return within.locator(selector).filter({ hasText: text }).first().waitFor();
}

/**
 * What a person sees of `page` on a desktop and on a phone: screenshots at 1440 and at 390 pixels wide, named
 * `name`-1440.png and `name`-390.png, in MAILROOM_SCREENSHOTS when that is set; from `scrolledTo` when given.
 * The window is left at 1440 by 900.
 */
export async function desktopAndPhoneShots(page: Page, name: string, scrolledTo?: string): Promise<void> {
  const folder = process.env.MAILROOM_SCREENSHOTS;
  if (!folder) return;
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    if (scrolledTo) await page.locator(scrolledTo).evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await page.screenshot({ path: `${folder}/${name}-${width}.png`, fullPage: width === 1440 });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** How far `page` is wider than its window: 0 when nothing runs off the side. */
export function overflowWidth(page: Page): Promise<number> {
  return page.evaluate(() => {
    const dom = globalThis as unknown as { document: { documentElement: { scrollWidth: number } }; innerWidth: number };
    return Math.max(0, dom.document.documentElement.scrollWidth - dom.innerWidth);
  });
}

/**
 * Answers the question the dashboard asks in its page before an action (its
 * confirmDialog): waits for the dialog, presses the button named `button`
 * ("Go back" declines) and waits until the dialog is gone. Resolves to the
 * dialog's text, title and message, for the test to check what was asked.
 */
export async function answerDialog(page: Page, button: string | RegExp): Promise<string> {
  const dialog = page.getByRole('dialog');
  await dialog.waitFor();
  const asked = (await dialog.locator('h2, .confirm-message').allInnerTexts()).join('\n');
  await dialog.getByRole('button', { name: button, exact: typeof button === 'string' }).click();
  await dialog.waitFor({ state: 'detached' });
  return asked;
}

/** Whether the page would have the browser ask before it is closed or reloaded: a beforeunload it cancels. */
export function leavingIsQuestioned(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const event = new Event('beforeunload', { cancelable: true });
    (globalThis as unknown as { dispatchEvent(e: Event): void }).dispatchEvent(event);
    return event.defaultPrevented;
  });
}
