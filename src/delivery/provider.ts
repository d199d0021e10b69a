import { memoize } from '../core/memo.js';

// Which organisation runs a mail exchanger, from the MX host name. Bounce and
// delivery events carry it, so deliverability can be read per mailbox
// provider (Gmail throttles differently from Outlook). A name matches an entry
// when it equals the suffix or ends with "." + suffix.

export const MX_PROVIDERS: ReadonlyArray<readonly [suffix: string, provider: string]> = Object.freeze([
  ['google.com', 'Google'], // aspmx.l.google.com, smtp.google.com
  ['googlemail.com', 'Google'], // alt1.aspmx.l.googlemail.com
  ['protection.outlook.com', 'Microsoft'], // tenant.mail.protection.outlook.com, outlook.com's olc
  ['outlook.com', 'Microsoft'],
  ['hotmail.com', 'Microsoft'],
  ['yahoodns.net', 'Yahoo'], // mta5.am0.yahoodns.net, AOL's mx-aol.mail.gm0.yahoodns.net too
  ['yahoo.com', 'Yahoo'],
  ['aol.com', 'Yahoo'],
  ['icloud.com', 'Apple'], // mx01.mail.icloud.com
  ['me.com', 'Apple'],
  ['protonmail.ch', 'Proton'], // mail.protonmail.ch, mailsec.protonmail.ch
  ['proton.me', 'Proton'],
  ['messagingengine.com', 'Fastmail'], // in1-smtp.messagingengine.com
  ['fastmail.com', 'Fastmail'],
  ['zoho.com', 'Zoho'],
  ['zoho.eu', 'Zoho'],
  ['zoho.in', 'Zoho'],
  ['zoho.com.au', 'Zoho'],
  ['zoho.jp', 'Zoho'],
  ['zohomail.com', 'Zoho'],
  ['yandex.ru', 'Yandex'],
  ['yandex.net', 'Yandex'],
  ['yandex.com', 'Yandex'],
  ['mail.ru', 'Mail.ru'],
  ['mimecast.com', 'Mimecast'], // eu-smtp-inbound-1.mimecast.com
  ['mimecast.co.za', 'Mimecast'],
  ['mimecast-offshore.com', 'Mimecast'],
  ['pphosted.com', 'Proofpoint'], // mx0a-001234.pphosted.com
  ['ppe-hosted.com', 'Proofpoint'], // Proofpoint Essentials
  ['iphmx.com', 'Cisco'], // Cisco Secure Email (IronPort) cloud
  ['barracudanetworks.com', 'Barracuda'],
  ['amazonaws.com', 'Amazon'], // WorkMail and SES inbound: inbound-smtp.<region>.amazonaws.com
  ['gmx.net', 'GMX'],
  ['web.de', 'Web.de'],
  ['ionos.de', 'IONOS'],
  ['ionos.com', 'IONOS'],
  ['qq.com', 'Tencent'],
  ['netease.com', 'NetEase'],
  ['comcast.net', 'Comcast'],
  ['orange.fr', 'Orange'],
]);

/** The organisation behind an MX host name, or undefined when it is not a known one. Every delivery and its metrics ask. */
export const providerForMx: (host: string) => string | undefined = memoize((host: string) => {
  const name = host.trim().toLowerCase().replace(/\.$/, '');
  return MX_PROVIDERS.find(([suffix]) => name === suffix || name.endsWith(`.${suffix}`))?.[1];
}, 10_000);
