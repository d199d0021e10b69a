import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Mailroom as a service: npm start hands SIGTERM and SIGINT to the server
// (which lets go of its ports), the systemd unit passes systemd's own check,
// and the Dockerfile copies what exists.

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as net.AddressInfo;
    s.close(() => resolve(port));
  });
});
const portTaken = (port: number) => new Promise<boolean>((resolve) => {
  const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
});

describe('npm start', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops the server on ${signal} sent to npm, freeing its port`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'mailroom-npm-start-'));
      const port = await freePort();
      const npm = spawn('npm', ['start'], {
        cwd: root, stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, MAILROOM_DATA_DIR: dataDir, MAILROOM_HTTP_PORT: String(port), MAILROOM_SMTP_PORT: '0', MAILROOM_SUBMISSION_PORT: '0', MAILROOM_LOG_LEVEL: 'silent' },
      });
      try {
        let out = '';
        npm.stdout!.on('data', (c: Buffer) => (out += c));
        for (const deadline = Date.now() + 20_000; !out.includes('Mailroom is running'); await new Promise((r) => setTimeout(r, 50))) {
          if (Date.now() > deadline) throw new Error(`npm start did not start: ${out}`);
        }
        expect(await portTaken(port)).toBe(true);
        // 'close', not 'exit': npm may have exited before the server's last words, which share its stdout, were read.
        const closed = new Promise<void>((resolve) => npm.once('close', () => resolve()));
        npm.kill(signal);
        await closed;
        // The server itself went too: its port is free again.
        for (const deadline = Date.now() + 10_000; await portTaken(port); await new Promise((r) => setTimeout(r, 50))) {
          if (Date.now() > deadline) throw new Error(`port ${port} still taken after ${signal} to npm`);
        }
        expect(out).toContain(`${signal}: shutting down`);
      } finally {
        npm.kill('SIGKILL');
        rmSync(dataDir, { recursive: true, force: true });
      }
    }, 40_000);
  }
});

describe('deploy/', () => {
  it('has a systemd unit that systemd-analyze verify accepts', async () => {
    expect(existsSync('/usr/bin/systemd-analyze'), 'systemd-analyze (Debian package systemd) is needed').toBe(true);
    const { stdout, stderr } = await run('systemd-analyze', ['verify', join(root, 'deploy/mailroom.service')]);
    expect(stdout + stderr).toBe('');
    const unit = readFileSync(join(root, 'deploy/mailroom.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/mailroom\/bin\/mailroom serve$/m);
  });

  it('has a Dockerfile whose copies name files of the repository and whose command starts the server', () => {
    const dockerfile = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8');
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1].split(/\s+/));
    expect(copied.length).toBeGreaterThan(4);
    for (const path of copied) expect(existsSync(join(root, path)), path).toBe(true);
    expect(dockerfile).toMatch(/^CMD \["node", "bin\/mailroom", "serve"\]$/m);
    expect(dockerfile).toContain('/readyz');
  });
});
