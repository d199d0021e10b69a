import { mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import nodemailer from 'nodemailer';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { markDomainActive } from '../../src/domains/domains.repo.js';
import { startMailroom } from '../../src/main.js';
import { apiClient } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

// What an operator reads: one structured line per HTTP request, per refused
// key, per delivery attempt and per SMTP session.

describe('the log', () => {
  it('has a line per request, refused key, delivery attempt and SMTP session', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
    const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-logs-'));
    const config = loadConfig({
      MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: '0', MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0', MAILROOM_DELIVERY: 'sink',
      MAILROOM_SEND_DELAY: '0', MAILROOM_HOSTNAME: 'mx.mailroom.test', MAILROOM_SMTP_HOST: '127.0.0.1',
    });
    // A submission port picked free by the OS: the listener takes 0 as "off", so ask for one first.
    const probe = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const m = await startMailroom({ ...config, submissionPort: probe }, { logger: pino({ level: 'info' }, sink) });
    try {
      const ws = await m.services.workspaces.ensureDefault();
      const { token, id: keyId } = await m.services.apiKeys.create({ workspaceId: ws.id, name: 'logs' });
      const domain = await m.services.domains.create(ws.id, { name: 'acme.test' });
      await m.services.store.write((tx) => markDomainActive(tx, ws.id, domain.id, Date.now()));
      const api = apiClient(m.httpUrl, token);
      const sent = await api.post('/v1/emails', { from: 'ann@acme.test', to: 'bo@example.org', subject: 'Hi', text: 'x' });
      expect(sent.status).toBe(201);
      expect((await api.as('svc_live_notakey000000000000000000').get('/v1/emails')).status).toBe(401);
      await m.delivery.drain();
      const transport = nodemailer.createTransport({ host: '127.0.0.1', port: probe, auth: { user: 'apikey', pass: token } });
      await transport.sendMail({ from: 'ann@acme.test', to: 'cy@example.org', subject: 'By SMTP', text: 'x' });
      transport.close();

      const request = lines.find((l) => l.msg === 'request' && l.operation === 'createEmail');
      expect(request).toMatchObject({ level: 30, method: 'POST', path: '/v1/emails', status: 201, key_id: keyId, workspace_id: ws.id });
      expect(request!.request_id).toBe(sent.headers.get('x-request-id'));
      expect(typeof request!.ms).toBe('number');
      expect(lines.find((l) => l.msg === 'refused an API key that is not valid')).toMatchObject({ level: 40, path: '/v1/emails' });
      expect(lines.find((l) => l.msg === 'delivery attempt' && l.email_id === sent.body.id)).toMatchObject({ result: 'delivered', domain: 'example.org', attempt: 1, ms: expect.any(Number) });
      await eventually(async () => lines.find((l) => l.msg === 'submission session closed'), 5_000, 'the submission session line');
      expect(lines.find((l) => l.msg === 'submission session closed')).toMatchObject({ remote_ip: '127.0.0.1', workspace_id: ws.id, messages: 1 });
      // Never a secret in the log.
      expect(JSON.stringify(lines)).not.toContain(token);
    } finally {
      await m.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
