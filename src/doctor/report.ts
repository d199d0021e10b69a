// What `mailroom doctor` found: one line per check, ok, warn or fail, and for
// what is not ok, what to publish or set.

export type CheckStatus = 'ok' | 'warn' | 'fail';

export type CheckArea = 'identity' | 'delivery' | 'domain' | 'tls' | 'public_url' | 'store';

export interface CheckResult {
  area: CheckArea;
  /** What was checked, e.g. `PTR 192.0.2.10` or `DKIM mr202611._domainkey.example.com`. */
  check: string;
  status: CheckStatus;
  /** One line of what was found. */
  found: string;
  /** When not ok: the record to publish or the setting to change. */
  fix?: string;
  /** Domain checks: the domain and its workspace. */
  domain?: string;
  workspace_id?: string;
}

export interface DoctorReport {
  /** The worst status of any check. */
  status: CheckStatus;
  counts: Record<CheckStatus, number>;
  checks: CheckResult[];
}

export const ok = (area: CheckArea, check: string, found: string): CheckResult => ({ area, check, status: 'ok', found });
export const warn = (area: CheckArea, check: string, found: string, fix?: string): CheckResult => ({ area, check, status: 'warn', found, ...(fix && { fix }) });
export const fail = (area: CheckArea, check: string, found: string, fix: string): CheckResult => ({ area, check, status: 'fail', found, fix });

export function reportOf(checks: CheckResult[]): DoctorReport {
  const counts: Record<CheckStatus, number> = { ok: 0, warn: 0, fail: 0 };
  for (const c of checks) counts[c.status]++;
  return { status: counts.fail > 0 ? 'fail' : counts.warn > 0 ? 'warn' : 'ok', counts, checks };
}

const TITLES: Record<CheckArea, string> = {
  identity: 'Server identity (MAILROOM_HOSTNAME)',
  delivery: 'Delivery (MAILROOM_DELIVERY)',
  domain: 'Domains',
  tls: 'TLS (MAILROOM_TLS_CERT)',
  public_url: 'Public URL (MAILROOM_PUBLIC_URL)',
  store: 'Store',
};

/** The report as a terminal shows it: a heading per area (per domain), a line per check, its fix indented below. */
export function formatReport(report: DoctorReport, shown: (text: string) => string): string {
  const lines: string[] = [];
  let heading = '';
  for (const c of report.checks) {
    const title = c.area === 'domain' && c.domain ? `Domain ${c.domain} (workspace ${c.workspace_id})` : TITLES[c.area];
    if (title !== heading) {
      if (lines.length > 0) lines.push('');
      lines.push(shown(title));
      heading = title;
    }
    lines.push(`  ${c.status.padEnd(4)}  ${shown(c.check)}: ${shown(c.found)}`);
    if (c.fix) lines.push(`        -> ${shown(c.fix)}`);
  }
  const { ok: oks, warn: warns, fail: fails } = report.counts;
  lines.push('', `${oks} ok, ${warns} warning${warns === 1 ? '' : 's'}, ${fails} failed.`);
  return lines.join('\n');
}
