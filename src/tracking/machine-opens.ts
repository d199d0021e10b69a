// Opens and clicks that no person made are flagged, not dropped: Apple Mail
// Privacy Protection fetches every image through Apple's proxy when a message
// arrives, and link scanners (Microsoft Defender Safe Links, Proofpoint,
// Mimecast, Barracuda…) fetch every link before the recipient sees it.

export type MachineReason = 'apple_mail_privacy' | 'security_scanner' | 'prefetch';

const SCANNER_AGENTS: Array<[RegExp, MachineReason]> = [
  [/Safe ?Links|Microsoft Office Protection|BingPreview/i, 'security_scanner'],
  [/Proofpoint|Mimecast|Barracuda|Trend ?Micro|Forcepoint|Symantec|Sophos|Cisco|IronPort|FireEye|Zscaler/i, 'security_scanner'],
  [/GoogleImageProxy|YahooMailProxy/i, 'prefetch'],
  [/\b(curl|wget|python-requests|Go-http-client|okhttp|Java\/|libwww|HeadlessChrome)\b/i, 'security_scanner'],
];

/**
 * Apple's proxy sends a bare "Mozilla/5.0" user agent (no platform details),
 * which no real mail client sends.
 */
const APPLE_PROXY_AGENT = /^Mozilla\/5\.0$/;

// A link fetched within this time of delivery is almost always a scanner.
const SCANNER_CLICK_WINDOW_MS = 10_000;

export function classifyOpen(userAgent: string): MachineReason | undefined {
  const ua = userAgent.trim();
  if (APPLE_PROXY_AGENT.test(ua)) return 'apple_mail_privacy';
  if (ua === '') return 'prefetch';
  return SCANNER_AGENTS.find(([re]) => re.test(ua))?.[1];
}

export function classifyClick(userAgent: string, msSinceSent: number | undefined): MachineReason | undefined {
  const byAgent = SCANNER_AGENTS.find(([re]) => re.test(userAgent))?.[1];
  if (byAgent) return byAgent;
  if (userAgent.trim() === '') return 'security_scanner';
  if (msSinceSent !== undefined && msSinceSent >= 0 && msSinceSent < SCANNER_CLICK_WINDOW_MS) return 'security_scanner';
  return undefined;
}
