import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const BROWSER = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';

async function sentMessage(t: TestApp, emailId: string) {
  const row = await t.mailroom.services.store.db.selectFrom('sink_messages').select('raw')
    .where('email_id', '=', emailId).executeTakeFirstOrThrow();
  return simpleParser(row.raw);
}

async function eventsOf(t: TestApp, emailId: string, type: string) {
  const res = await t.api.get(`/v1/events?email_id=${emailId}&event_type=${type}`);
  expect(res.status).toBe(200);
  return res.body.data as Array<{ data: Record<string, unknown> }>;
}

describe('open and click tracking', () => {
  it('rewrites links and adds a pixel; opens and clicks become events with counts; tampered tokens are 404', async () => {
    await using t = await startTestApp();
    const domain = await t.seed.activeDomain('track.example');
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { open_tracking: true, click_tracking: true })).status).toBe(200);

    const sent = await t.api.post('/v1/emails', {
      from: 'Shop <shop@track.example>', to: 'reader@example.net', subject: 'Your order',
      html: '<html><body><p><a href="https://shop.example/p?id=1&amp;ref=mail">See it</a> or '
        + '<a href="mailto:help@track.example">write</a> or <a href="#faq">read</a>.</p></body></html>',
      text: 'See it at https://shop.example/p?id=1',
    });
    expect(sent.status).toBe(201);
    await t.mailroom.delivery.drain();

    const message = await sentMessage(t, sent.body.id);
    const html = String(message.html);
    expect(message.text?.trim()).toBe('See it at https://shop.example/p?id=1');
    expect(html).toContain('href="mailto:help@track.example"');
    expect(html).toContain('href="#faq"');
    expect(html).not.toContain('https://shop.example/p');
    const pixel = /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)![1];
    const link = /href="([^"]+\/t\/c\/[^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');
    expect(pixel.startsWith(t.url)).toBe(true);

    const open = await fetch(pixel, { headers: { 'User-Agent': BROWSER } });
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('image/gif');
    expect(open.headers.get('cache-control')).toContain('no-store');
    expect((await open.arrayBuffer()).byteLength).toBeLessThan(100);
    await fetch(pixel, { headers: { 'User-Agent': 'Mozilla/5.0' } });  // Apple Mail privacy proxy

    const click = await fetch(link, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example/p?id=1&ref=mail');

    const opens = await eventsOf(t, sent.body.id, 'opened');
    expect(opens.map((e) => e.data.open_count).sort()).toEqual([1, 2]);
    const human = opens.find((e) => e.data.open_count === 1)!.data;
    expect(human).toMatchObject({ to: 'reader@example.net', user_agent: BROWSER, machine: false });
    expect(human.ip_address).toMatch(/127\.0\.0\.1/);
    expect(opens.find((e) => e.data.open_count === 2)!.data).toMatchObject({ machine: true, machine_reason: 'apple_mail_privacy' });
    const clicks = await eventsOf(t, sent.body.id, 'clicked');
    expect(clicks).toHaveLength(1);
    expect(clicks[0].data).toMatchObject({ to: 'reader@example.net', url: 'https://shop.example/p?id=1&ref=mail', click_count: 1, user_agent: BROWSER });

    // The email's own timeline shows them too.
    const timeline = (await t.api.get(`/v1/emails/${sent.body.id}/events?limit=100`)).body.data.map((e: { type: string }) => e.type);
    expect(timeline).toEqual(expect.arrayContaining(['email.sent', 'email.delivered', 'email.opened', 'email.clicked']));

    // Tampered, truncated or cross-kind tokens name nothing.
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('A') ? 'B' : 'A');
    const token = link.split('/t/c/')[1];
    const openToken = pixel.split('/t/o/')[1];
    for (const bad of [`/t/c/${flip(token)}`, `/t/c/${token.slice(0, 20)}`, `/t/o/${token}`, '/t/c/https%3A%2F%2Fevil.example', `/t/o/${flip(openToken)}`]) {
      const res = await fetch(t.url + bad, { redirect: 'manual' });
      expect(res.status, bad).toBe(404);
      expect(res.headers.get('location')).toBeNull();
    }
    expect((await eventsOf(t, sent.body.id, 'clicked'))).toHaveLength(1);
    // A person who follows a mangled link in a browser reads why in a page.
    const inBrowser = await fetch(`${t.url}/t/c/${flip(token)}`, { redirect: 'manual', headers: { Accept: 'text/html' } });
    expect(inBrowser.status).toBe(404);
    expect(inBrowser.headers.get('content-type')).toContain('text/html');
    expect(await inBrowser.text()).toContain('This link is not valid');
  });

  it('tracks a link whose character reference names no character, without holding up the mail claimed with it', async () => {
    await using t = await startTestApp();
    const domain = await t.seed.activeDomain('track.example');
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { click_tracking: true })).status).toBe(200);
    const other = await t.seed.workspace();
    const them = t.api.as((await t.seed.key({ workspaceId: other.id })).token);
    await t.seed.activeDomain('other.example', { workspaceId: other.id });

    // Past U+10FFFF, and a surrogate: HTML reads both as U+FFFD.
    const odd = await t.api.post('/v1/emails', {
      from: 'shop@track.example', to: 'reader@example.net', subject: 'Odd link',
      html: '<p><a href="https://shop.example/a&#x110000;">a</a> <a href="https://shop.example/b&#55296;">b</a></p>',
    });
    const plain = await them.post('/v1/emails', { from: 'news@other.example', to: 'reader@example.net', subject: 'Plain', html: '<p>hi</p>' });
    await t.mailroom.delivery.drain();

    expect((await t.api.get(`/v1/emails/${odd.body.id}`)).body.status).toBe('delivered');
    expect((await them.get(`/v1/emails/${plain.body.id}`)).body.status).toBe('delivered');
    const html = String((await sentMessage(t, odd.body.id)).html);
    expect(html.match(/href="[^"]+\/t\/c\/[^"]+"/g)).toHaveLength(2);
    expect(html).not.toContain('https://shop.example/');
  });

  it('sends a click on a link written in Unicode where a browser would, and leaves a link that is no URL untracked', async () => {
    await using t = await startTestApp();
    const domain = await t.seed.activeDomain('track.example');
    expect((await t.api.patch(`/v1/domains/${domain.id}`, { click_tracking: true })).status).toBe(200);
    const sent = await t.api.post('/v1/emails', {
      from: 'shop@track.example', to: 'reader@example.net', subject: 'Unicode links',
      html: '<p><a href="https://shop.example/café?q=naïve">a</a> <a href="https://bücher.example/">b</a> <a href="https://exa mple.example/x">c</a></p>',
    });
    await t.mailroom.delivery.drain();

    const html = String((await sentMessage(t, sent.body.id)).html);
    expect(html).toContain('href="https://exa mple.example/x"');
    const links = [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((m) => m[1]);
    expect(links).toHaveLength(2);
    const locations = [];
    for (const link of links) {
      const click = await fetch(link, { redirect: 'manual', headers: { 'User-Agent': BROWSER } });
      expect(click.status).toBe(302);
      locations.push(click.headers.get('location'));
    }
    expect(locations).toEqual(['https://shop.example/caf%C3%A9?q=na%C3%AFve', 'https://xn--bcher-kva.example/']);
    const clicks = await eventsOf(t, sent.body.id, 'clicked');
    expect(clicks.map((c) => c.data.url).sort()).toEqual(['https://bücher.example/', 'https://shop.example/café?q=naïve']);
  });

  it('leaves mail untouched when the domain does not track', async () => {
    await using t = await startTestApp();
    await t.seed.activeDomain('plain.example');
    const html = '<p><a href="https://shop.example/x">x</a></p>';
    const sent = await t.api.post('/v1/emails', { from: 'a@plain.example', to: 'b@example.net', subject: 's', html });
    await t.mailroom.delivery.drain();
    const message = await sentMessage(t, sent.body.id);
    expect(String(message.html)).toContain('href="https://shop.example/x"');
    expect(String(message.html)).not.toContain('/t/o/');
  });
});
