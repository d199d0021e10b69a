import { describe, expect, it } from 'vitest';
import { recordsFor, type RecordSettings } from '../../../src/domains/dns-records.js';

const RSA_TXT = 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA';
const ED_TXT = 'v=DKIM1; k=ed25519; p=11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=';

const settings = (over: Partial<RecordSettings> = {}): RecordSettings => ({
  dkim: [
    { selector: 'mr202501', publicTxt: RSA_TXT, state: 'active' },
    { selector: 'mr202501e', publicTxt: ED_TXT, state: 'active' },
  ],
  mxHost: 'mx.mailroom.test',
  inboundEnabled: false,
  trackingEnabled: false,
  trackingTarget: 'track.mailroom.test',
  ...over,
});

describe('recordsFor', () => {
  it('lists the sending records, required ones marked', () => {
    expect(recordsFor('example.com', settings())).toEqual([
      { record: 'DKIM', type: 'TXT', name: 'mr202501._domainkey.example.com', value: RSA_TXT, ttl: 'Auto', required: true, keyState: 'active' },
      { record: 'DKIM_ED25519', type: 'TXT', name: 'mr202501e._domainkey.example.com', value: ED_TXT, ttl: 'Auto', required: false, keyState: 'active' },
      { record: 'SPF', type: 'TXT', name: 'bounces.example.com', value: 'v=spf1 a:mx.mailroom.test ~all', ttl: 'Auto', required: true },
      { record: 'MX_BOUNCE', type: 'MX', name: 'bounces.example.com', value: 'mx.mailroom.test', priority: 10, ttl: 'Auto', required: true },
      { record: 'DMARC', type: 'TXT', name: '_dmarc.example.com', value: 'v=DMARC1; p=none;', ttl: 'Auto', required: false },
    ]);
  });

  it('adds the inbound MX and the tracking CNAME when those are on', () => {
    const records = recordsFor('example.com', settings({ inboundEnabled: true, trackingEnabled: true }));
    expect(records.find((r) => r.record === 'MX_INBOUND')).toEqual({
      record: 'MX_INBOUND', type: 'MX', name: 'example.com', value: 'mx.mailroom.test', priority: 10, ttl: 'Auto', required: false,
    });
    expect(records.find((r) => r.record === 'TRACKING')).toEqual({
      record: 'TRACKING', type: 'CNAME', name: 'track.example.com', value: 'track.mailroom.test', ttl: 'Auto', required: false,
    });
  });

  it('uses the chosen subdomains and normalises host names', () => {
    const records = recordsFor(
      'example.com',
      settings({
        returnPathSubdomain: 'Send.Mail',
        mxHost: 'MX.Mailroom.Test.',
        trackingEnabled: true,
        trackingSubdomain: 'links',
        trackingTarget: 'Links.Mailroom.Test.',
      }),
    );
    const byKind = Object.fromEntries(records.map((r) => [r.record, r]));
    expect(byKind.SPF).toMatchObject({ name: 'send.mail.example.com', value: 'v=spf1 a:mx.mailroom.test ~all' });
    expect(byKind.MX_BOUNCE).toMatchObject({ name: 'send.mail.example.com', value: 'mx.mailroom.test' });
    expect(byKind.TRACKING).toMatchObject({ name: 'links.example.com', value: 'links.mailroom.test' });
  });

  it('treats a DKIM key without k= as RSA, lists every key given, and requires only the active one', () => {
    const records = recordsFor('example.com', settings({
      dkim: [
        { selector: 'old', publicTxt: 'v=DKIM1; p=AAAA', state: 'retiring' },
        { selector: 'now', publicTxt: RSA_TXT, state: 'active' },
        { selector: 'next', publicTxt: RSA_TXT, state: 'pending' },
      ],
    }));
    expect(records.filter((r) => r.record === 'DKIM').map((r) => [r.name, r.required, r.keyState])).toEqual([
      ['old._domainkey.example.com', false, 'retiring'],
      ['now._domainkey.example.com', true, 'active'],
      ['next._domainkey.example.com', false, 'pending'],
    ]);
  });

  it('refuses a bad subdomain or a domain without an RSA key', () => {
    expect(() => recordsFor('example.com', settings({ returnPathSubdomain: 'bad_label' }))).toThrow(/Invalid subdomain/);
    expect(() => recordsFor('example.com', settings({ trackingEnabled: true, trackingSubdomain: '-x' }))).toThrow(
      /Invalid subdomain/,
    );
    expect(() => recordsFor('example.com', settings({ dkim: [{ selector: 'e', publicTxt: ED_TXT, state: 'active' }, { selector: 'p', publicTxt: RSA_TXT, state: 'pending' }] }))).toThrow(/RSA/);
  });
});
