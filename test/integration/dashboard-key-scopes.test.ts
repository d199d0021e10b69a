import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { FINE_SCOPES } from '../../src/core/scopes.js';
import { desktopAndPhoneShots, launchChromium, noteSays, signedInDashboard, watchRequests } from '../helpers/browser.js';
import { until } from '../helpers/child-server.js';

// The dashboard in Chromium with keys of different scopes: it reads what its
// key may do from GET /v1/api-keys/current, lists only the sections the key
// may read, and offers no action the key may not take, saying in one line
// which scope the view's actions need. A full-access key sees them all. The
// form that creates a key offers only what the key may grant.

const SCREENSHOTS = process.env.MAILROOM_SCREENSHOTS;

/** Every scope that reads, save analytics, inbound mail and API keys; none that writes. */
const READ_ONLY = ['emails:read', 'domains:read', 'events:read', 'contacts:read', 'suppressions:read', 'webhooks:read',
  'templates:read', 'broadcasts:read', 'queue:read'];

interface ViewCase {
  route: string;
  heading: string;
  /** Text the view shows once its lists have loaded. */
  ready: string;
  /** The write scope its actions need, which the read-only key lacks. */
  scope: string;
  buttons: string[];
  links?: string[];
}

describe('the dashboard offers what its key may do', () => {
  let t: TestApp;
  let browser: Browser;
  let views: ViewCase[];

  beforeAll(async () => {
    t = await startTestApp();
    const domain = await t.seed.activeDomain('acme.test');
    const sent = await t.api.post('/v1/emails', { from: 'news@acme.test', to: 'ann@example.test', subject: 'Hello Ann', text: 'Hi.' });
    expect(sent.status).toBe(201);
    await until('the email delivered to the sink', async () => ((await t.api.get(`/v1/emails/${sent.body.id}`)).body.status === 'delivered' || undefined));
    const template = await t.api.post('/v1/templates', { name: 'Welcome', subject: 'Welcome {{ contact.first_name }}', html: '<p>Hi</p>' });
    const contact = await t.api.post('/v1/contacts', { email: 'bea@example.test', name: 'Bea Stone' });
    // A draft with all it needs to be sent, so that its send buttons are on for a key that may send it.
    const broadcast = await t.api.post('/v1/broadcasts', { name: 'November news', from: 'News <news@acme.test>', subject: 'November', text: 'News' });
    expect((await t.api.post('/v1/suppressions', { email: 'gone@example.test' })).status).toBe(201);
    views = [
      { route: '/domains', heading: 'Domains', ready: 'acme.test', scope: 'domains:write', buttons: ['Add domain'] },
      { route: `/domains/${domain.id}`, heading: 'acme.test', ready: 'DNS records', scope: 'domains:write',
        buttons: ['Verify', 'Rotate DKIM key', 'Delete', 'Save settings'] },
      { route: `/emails/${sent.body.id}`, heading: 'Hello Ann', ready: 'Message-ID', scope: 'emails:send', buttons: ['Resend'] },
      { route: '/templates', heading: 'Templates', ready: 'Welcome', scope: 'templates:write', buttons: [], links: ['New template'] },
      { route: `/templates/${template.body.id}`, heading: 'Welcome', ready: 'version 1', scope: 'templates:write',
        buttons: ['Save as a new version', 'Add variable', 'Duplicate', 'Delete', 'Publish'] },
      { route: '/broadcasts', heading: 'Broadcasts', ready: 'November news', scope: 'broadcasts:write', buttons: [], links: ['New broadcast'] },
      { route: `/broadcasts/${broadcast.body.id}`, heading: 'November news', ready: 'Audience now', scope: 'broadcasts:write',
        buttons: ['Save', 'Send test', 'Send now…', 'Delete'] },
      { route: '/contacts', heading: 'Contacts', ready: 'bea@example.test', scope: 'contacts:write',
        buttons: ['Add a contact', 'Add contact'], links: ['Import CSV'] },
      { route: `/contacts/${contact.body.id}`, heading: 'bea@example.test', ready: 'Properties', scope: 'contacts:write',
        buttons: ['Unsubscribe', 'Delete', 'Add tag', 'Save the name'] },
      { route: '/suppressions', heading: 'Suppressions', ready: 'gone@example.test', scope: 'suppressions:write', buttons: ['Remove', 'Suppress'] },
      { route: '/webhooks', heading: 'Webhooks', ready: 'No endpoints yet', scope: 'webhooks:write', buttons: ['Add endpoint'] },
      { route: '/queue', heading: 'Queue', ready: 'Nothing is waiting', scope: 'queue:write', buttons: ['Retry all now', 'Hold'] },
    ];
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  /** Opens `view` and waits until it has drawn its lists. */
  const open = async (page: Page, view: ViewCase) => {
    await page.goto(`${t.url}/dashboard/#${view.route}`);
    await page.getByRole('heading', { name: view.heading, level: 1, exact: true }).waitFor();
    await page.getByText(view.ready).first().waitFor();
  };
  const enabledButtons = (page: Page, name: string) => page.getByRole('button', { name, exact: true }).and(page.locator(':enabled')).count();
  const navLinks = (page: Page) => page.getByRole('navigation', { name: 'Main' }).getByRole('link').allTextContents();

  it('with a read-only key: the nav lacks what it cannot read, and no view offers a change', async () => {
    const { token } = await t.seed.key({ name: 'auditor', scopes: READ_ONLY });
    const page = await signedInDashboard(browser, t.url, token, '/emails', 'Emails');
    expect(await navLinks(page)).toEqual(['Emails', 'Domains', 'Events', 'Queue', 'Templates', 'Broadcasts', 'Contacts', 'Suppressions', 'Webhooks']);
    for (const view of views) {
      await open(page, view);
      for (const name of view.buttons) expect(await enabledButtons(page, name), `${view.route}: ${name}`).toBe(0);
      for (const name of view.links ?? []) expect(await page.getByRole('link', { name, exact: true }).count(), `${view.route}: ${name}`).toBe(0);
      // What is not offered is said, with the scope it needs.
      expect(await page.locator('.withheld').first().textContent(), view.route).toContain(view.scope);
    }
    // No row can be picked for a bulk action.
    await open(page, views.find((v) => v.route === '/contacts')!);
    expect(await page.locator('input.select-box').count()).toBe(0);
    // Settings still read, fixed.
    await open(page, views.find((v) => v.route.startsWith('/domains/'))!);
    expect(await page.getByLabel('Open tracking').isDisabled()).toBe(true);
    // A broadcast's source editors too: the text reads, and no key changes it.
    await open(page, views.find((v) => v.route.startsWith('/broadcasts/'))!);
    expect(await page.locator('#broadcast-html .cm-content').getAttribute('contenteditable')).toBe('false');
    expect(await page.locator('#broadcast-text .cm-content').getAttribute('contenteditable')).toBe('false');

    if (SCREENSHOTS) {
      for (const [width, height] of [[1440, 900], [390, 844]]) {
        await page.setViewportSize({ width, height });
        for (const [view, name] of [[views[1], 'domain'], [views[8], 'contact'], [views[4], 'template']] as const) {
          await open(page, view);
          await page.screenshot({ path: `${SCREENSHOTS}/read-only-${name}-${width}.png`, fullPage: true });
        }
      }
    }
    await page.close();
  });

  it('with a full-access key: every section and every action', async () => {
    const page = await signedInDashboard(browser, t.url, t.token, '/emails', 'Emails');
    expect(await navLinks(page)).toEqual(['Emails', 'Domains', 'Events', 'Analytics', 'Queue', 'Inbound', 'Templates', 'Broadcasts', 'Contacts',
      'Suppressions', 'Webhooks', 'API keys']);
    for (const view of views) {
      await open(page, view);
      for (const name of view.buttons) expect(await enabledButtons(page, name), `${view.route}: ${name}`).toBeGreaterThan(0);
      for (const name of view.links ?? []) expect(await page.getByRole('link', { name, exact: true }).count(), `${view.route}: ${name}`).toBe(1);
      expect(await page.locator('.withheld').count(), view.route).toBe(0);
    }
    await page.close();
  });

  it('offers everything, as before, when the key\'s scopes cannot be read (an older server)', async () => {
    const { token } = await t.seed.key({ name: 'auditor on an older server', scopes: READ_ONLY });
    const page = await signedInDashboard(browser, t.url, token, '/emails', 'Emails', {
      beforeSignIn: (p) => p.route('**/v1/api-keys/current', (route) =>
        route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { code: 'not_found', message: 'No such route.' } }) })),
    });
    expect(await navLinks(page)).toHaveLength(12);
    const domains = views[0];
    await open(page, domains);
    expect(await enabledButtons(page, 'Add domain')).toBe(1);
    expect(await page.locator('.withheld').count()).toBe(0);
    await page.close();
  });

  it('with a key that may read API keys but not change them: no Create, no Revoke', async () => {
    const { token } = await t.seed.key({ name: 'key reader', scopes: ['emails:read', 'api_keys:read'] });
    const page = await signedInDashboard(browser, t.url, token, '/api-keys', 'API keys');
    expect(await navLinks(page)).toEqual(['Emails', 'API keys']);
    await page.getByText('key reader').first().waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Revoke' }).count()).toBe(0);
    expect(await page.locator('.withheld').textContent()).toContain('api_keys:write');
    await page.close();
  });

  it('opens each view with a key that may read only its own section, with no error', async () => {
    const lists = [['/emails', 'Emails'], ['/events', 'Events'], ['/analytics', 'Analytics'], ['/inbound', 'Inbound'], ['/api-keys', 'API keys']];
    for (const view of [...views, ...lists.map(([route, heading]) => ({ route, heading, ready: heading }))]) {
      const section = view.route.split('/')[1];
      const scope = `${section.replace('-', '_')}:read`;
      const { token } = await t.seed.key({ name: `only ${scope}`, scopes: [scope] });
      let quiet: ReturnType<typeof watchRequests> | undefined;
      const page = await signedInDashboard(browser, t.url, token, view.route, view.heading, { beforeSignIn: async (p) => { quiet = watchRequests(p); } });
      await page.getByText(view.ready).first().waitFor();
      // Let the view's later reads (previews, counts) answer too.
      await quiet!();
      expect(await page.locator('.error-box').allTextContents(), `${view.route} with ${scope}`).toEqual([]);
      await page.close();
    }
  }, 90_000);

  it('edits a broadcast with a key that may not list domains, tags or templates, keeping the choices it has', async () => {
    const template = await t.api.post('/v1/templates', { name: 'Digest', subject: 'Digest', html: '<p>Digest</p>' });
    expect((await t.api.post(`/v1/templates/${template.body.id}/publish`, {})).status).toBe(200);
    expect((await t.api.post('/v1/contacts', { email: 'cy@example.test', tags: ['readers'] })).status).toBe(201);
    const tag = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'readers')!;
    const created = await t.api.post('/v1/broadcasts', { name: 'Weekly digest', from: 'news@acme.test',
      template: { id: template.body.id, version: 1 }, audience: { tag_ids: [tag.id] } });
    expect(created.status).toBe(201);
    const { token } = await t.seed.key({ name: 'broadcaster', scopes: ['broadcasts:read', 'broadcasts:write'] });
    const page = await signedInDashboard(browser, t.url, token, `/broadcasts/${created.body.id}`, 'Weekly digest');
    await page.getByLabel('Subject').fill('This week');
    expect(await page.locator('#broadcast-from-domain').isVisible()).toBe(false);
    // The audience's tag, listed by its id, stays chosen.
    expect(await page.locator(`#include-tag-${tag.id}`).isChecked()).toBe(true);
    expect(await page.locator(`#exclude-tag-${tag.id}`).isChecked()).toBe(false);
    await page.getByText('Tags shown by id: naming them needs contacts:read.').waitFor();
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByText('Saved.').waitFor();
    expect((await t.api.get(`/v1/broadcasts/${created.body.id}`)).body).toMatchObject({
      subject: 'This week', template: { id: template.body.id, version: 1 }, audience: { tag_ids: [tag.id] } });
    await page.close();

    // Analytics without domains:read: the figures, without the domain filter.
    const reporter = await t.seed.key({ name: 'reporter', scopes: ['analytics:read'] });
    const charts = await signedInDashboard(browser, t.url, reporter.token, '/analytics', 'Analytics');
    await charts.getByLabel('Range').waitFor();
    expect(await charts.getByLabel('Domain').count()).toBe(0);
    expect(await charts.getByRole('alert').count()).toBe(0);
    await charts.close();
  });

  it('opens on the first section the key may read, and says which scope a section it may not read needs', async () => {
    const { token } = await t.seed.key({ name: 'template reader', scopes: ['templates:read', 'contacts:read'] });
    const page = await signedInDashboard(browser, t.url, token, '/', 'Templates');
    expect(page.url()).toMatch(/#\/templates$/);
    // Typed by hand, a section the nav does not offer.
    await page.goto(`${t.url}/dashboard/#/emails/em_anything`);
    await page.getByRole('heading', { name: 'Emails', level: 1 }).waitFor();
    expect(await page.locator('.withheld').textContent()).toBe('This key cannot read this section: it lacks emails:read.');
    await page.getByRole('link', { name: 'Go to Templates' }).click();
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor();
    await page.close();
  });
  describe('the form that creates a key', () => {
    /** The scopes of the key named `name`, as the API lists them. */
    const scopesOf = async (name: string) => {
      const keys = (await t.api.get('/v1/api-keys?limit=100')).body.data as Array<{ name: string; scopes: string[] }>;
      return keys.find((k) => k.name === name)?.scopes.sort();
    };
    /** The labels of the radios under Access, and of the scopes' checkboxes, as offered. */
    const offered = async (page: Page) => ({
      access: await page.getByRole('group', { name: 'Access' }).getByRole('radio').evaluateAll((radios) =>
        radios.map((radio) => (radio as unknown as { labels: Array<{ textContent: string }> }).labels[0].textContent)),
      scopes: await page.locator('.scope-custom input[type="checkbox"]').evaluateAll((boxes) => boxes.map((box) => (box as unknown as { value: string }).value)),
    });
    const custom = (page: Page) => page.getByRole('group', { name: 'Scopes' });
    /** Names the key, chooses its access (and scopes) and creates it. */
    const create = async (page: Page, name: string, access: string, scopes: string[] = []) => {
      await page.getByLabel('Key name').fill(name);
      await page.getByRole('radio', { name: access }).check();
      for (const scope of scopes) await page.getByLabel(scope, { exact: true }).check();
      await page.getByRole('button', { name: 'Create key' }).click();
    };

    it('offers full, sending or custom access, shows the scopes for custom only, and makes a key of each', async () => {
      const page = await signedInDashboard(browser, t.url, t.token, '/api-keys', 'API keys');
      expect(await offered(page)).toEqual({ access: ['Full access', 'Sending access', 'Custom'], scopes: [...FINE_SCOPES] });
      expect(await page.getByRole('radio', { name: 'Full access' }).isChecked()).toBe(true);
      expect(await custom(page).isHidden()).toBe(true);
      expect(await page.locator('.key-lacks').count()).toBe(0);
      await page.getByRole('radio', { name: 'Sending access' }).check();
      expect(await custom(page).isHidden()).toBe(true);
      await page.getByRole('radio', { name: 'Custom' }).check();
      await custom(page).waitFor();
      // Each scope says what it allows, read out after its name.
      expect(await page.getByRole('checkbox', { name: 'domains:write' }).getAttribute('aria-describedby')).toBe('scope-domains:write-what');
      expect(await page.locator('[id="scope-domains:write-what"]').textContent()).toContain('rotate their DKIM keys');
      await page.getByLabel('emails:read', { exact: true }).check();
      await page.getByLabel('analytics:read', { exact: true }).check();
      await desktopAndPhoneShots(page, 'api-keys-custom', '.key-form');
      await page.getByRole('radio', { name: 'Full access' }).check();
      expect(await custom(page).isHidden()).toBe(true);

      // The scopes ticked under Custom are not sent with another choice.
      await create(page, 'everything', 'Full access');
      await noteSays(page, 'Key “everything” created');
      expect(await scopesOf('everything')).toEqual(['full_access']);
      await create(page, 'sender', 'Sending access');
      await noteSays(page, 'Key “sender” created');
      expect(await scopesOf('sender')).toEqual(['sending_access']);
      await create(page, 'reporting', 'Custom', ['emails:read', 'analytics:read']);
      await noteSays(page, 'Key “reporting” created');
      expect(await scopesOf('reporting')).toEqual(['analytics:read', 'emails:read']);
      await page.close();
    });

    it('refuses custom access with no scope chosen, beside the field, sending nothing', async () => {
      const page = await signedInDashboard(browser, t.url, t.token, '/api-keys', 'API keys');
      const posts: string[] = [];
      page.on('request', (request) => {
        if (request.method() === 'POST') posts.push(request.url());
      });
      await create(page, 'nothing chosen', 'Custom');
      await page.locator('.field-error[data-field="scopes"]').getByRole('alert').filter({ hasText: 'Choose at least one scope.' }).waitFor();
      await desktopAndPhoneShots(page, 'api-keys-custom-refused', '.scope-custom');
      expect(posts).toEqual([]);
      expect(await scopesOf('nothing chosen')).toBeUndefined();
      await page.close();
    });

    it('does not offer full access to a key that holds every scope but full_access', async () => {
      const { token } = await t.seed.key({ name: 'every fine scope', scopes: [...FINE_SCOPES] });
      const page = await signedInDashboard(browser, t.url, token, '/api-keys', 'API keys');
      expect(await offered(page)).toEqual({ access: ['Sending access', 'Custom'], scopes: [...FINE_SCOPES] });
      expect(await page.locator('.key-lacks').allTextContents()).toEqual(['Full access is not offered: your key lacks full_access.']);
      expect(await page.getByRole('radio', { name: 'Sending access' }).isChecked()).toBe(true);
      // As the API has it.
      expect((await t.api.as(token).post('/v1/api-keys', { name: 'refused', scopes: ['full_access'] })).status).toBe(403);
      await create(page, 'sender of a fine key', 'Sending access');
      await noteSays(page, 'Key “sender of a fine key” created');
      expect(await scopesOf('sender of a fine key')).toEqual(['sending_access']);
      await page.close();
    });

    it('offers a restricted key only the scopes it holds, naming those it lacks', async () => {
      const held = ['emails:read', 'analytics:read', 'api_keys:read', 'api_keys:write'];
      const { token } = await t.seed.key({ name: 'key manager', scopes: held });
      const page = await signedInDashboard(browser, t.url, token, '/api-keys', 'API keys');
      expect(await offered(page)).toEqual({ access: ['Custom'], scopes: held });
      // Custom, the one choice, is chosen, its scopes shown.
      expect(await page.getByRole('radio', { name: 'Custom' }).isChecked()).toBe(true);
      await custom(page).waitFor();
      expect(await page.locator('.key-lacks').allTextContents()).toEqual([
        'Full access is not offered: your key lacks full_access.',
        'Sending access is not offered: your key lacks emails:send.',
        `Not listed, as your key lacks them: ${FINE_SCOPES.filter((s) => !held.includes(s)).join(', ')}.`,
      ]);
      await desktopAndPhoneShots(page, 'api-keys-restricted', '.key-form');
      for (const scopes of [['full_access'], ['sending_access'], ['domains:read']]) {
        expect((await t.api.as(token).post('/v1/api-keys', { name: 'refused', scopes })).status, scopes[0]).toBe(403);
      }
      await create(page, 'analyst', 'Custom', ['analytics:read']);
      await noteSays(page, 'Key “analyst” created');
      expect(await scopesOf('analyst')).toEqual(['analytics:read']);
      await page.close();
    });

    it('shows the API\'s refusal beside Access when the key\'s scopes could not be read', async () => {
      const { token } = await t.seed.key({ name: 'key manager on an older server', scopes: ['emails:read', 'api_keys:write'] });
      const page = await signedInDashboard(browser, t.url, token, '/api-keys', 'API keys', {
        beforeSignIn: (p) => p.route('**/v1/api-keys/current', (route) =>
          route.fulfill({ status: 404, contentType: 'application/json', body: JSON.stringify({ error: { code: 'not_found', message: 'No such route.' } }) })),
      });
      expect((await offered(page)).access).toEqual(['Full access', 'Sending access', 'Custom']);
      await create(page, 'too much', 'Full access');
      await page.locator('.field-error[data-field="scopes"]').getByRole('alert').filter({ hasText: 'scopes it does not hold itself' }).waitFor();
      expect(await scopesOf('too much')).toBeUndefined();
      await page.close();
    });

    it('is worked by keyboard: the choices one group of radios, the focus shown', async () => {
      const page = await signedInDashboard(browser, t.url, t.token, '/api-keys', 'API keys');
      await page.getByLabel('Key name').focus();
      await page.keyboard.press('Tab');
      const full = page.getByRole('radio', { name: 'Full access' });
      expect(await full.evaluate((radio) => radio.matches(':focus-visible'))).toBe(true);
      expect(await full.evaluate((radio) => (globalThis as unknown as { getComputedStyle(el: unknown): { outlineStyle: string } })
        .getComputedStyle(radio).outlineStyle)).toBe('solid');
      // Arrows move the choice within the group; Tab leaves it for the scopes.
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      expect(await page.getByRole('radio', { name: 'Custom' }).isChecked()).toBe(true);
      await custom(page).waitFor();
      await page.keyboard.press('Tab');
      const first = page.getByRole('checkbox', { name: 'emails:send' });
      expect(await first.evaluate((box) => box === box.ownerDocument.activeElement)).toBe(true);
      await page.keyboard.press('Space');
      expect(await first.isChecked()).toBe(true);
      // Each choice says what it allows, read out after its name.
      const described = await page.getByRole('radio', { name: 'Sending access' }).getAttribute('aria-describedby');
      expect(await page.locator(`#${described}`).textContent()).toContain('emails:send');
      await page.close();
    });
  });
});
