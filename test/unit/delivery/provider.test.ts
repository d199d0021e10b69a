import { describe, expect, it } from 'vitest';
import { providerForMx } from '../../../src/delivery/provider.js';

describe('MX provider', () => {
  it.each([
    ['aspmx.l.google.com', 'Google'],
    ['ALT1.ASPMX.L.GOOGLEMAIL.COM.', 'Google'],
    ['smtp.google.com', 'Google'],
    ['contoso-com.mail.protection.outlook.com', 'Microsoft'],
    ['outlook-com.olc.protection.outlook.com', 'Microsoft'],
    ['mta5.am0.yahoodns.net', 'Yahoo'],
    ['mx-aol.mail.gm0.yahoodns.net', 'Yahoo'],
    ['mx01.mail.icloud.com', 'Apple'],
    ['mailsec.protonmail.ch', 'Proton'],
    ['in1-smtp.messagingengine.com', 'Fastmail'],
    ['mx.zoho.eu', 'Zoho'],
    ['mx.yandex.net', 'Yandex'],
    ['eu-smtp-inbound-1.mimecast.com', 'Mimecast'],
    ['mx0a-001b2d01.pphosted.com', 'Proofpoint'],
    ['mx1.example.org', undefined],
    // a suffix must match on a label boundary
    ['notgoogle.com', undefined],
    ['google.com.evil.example', undefined],
  ])('%s -> %s', (host, provider) => {
    expect(providerForMx(host)).toBe(provider);
  });
});
