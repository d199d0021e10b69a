// DKIM signatures per second: mailauth's dkimSign (PEM parsed per message),
// DkimSigner on the calling thread (key parsed once), and DkimSigner with its
// worker pool, as compiled into dist/.
// Run: npm run build && npx tsx bench/dkim-sign.ts [messages]

import { generateKeyPairSync } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { DkimSigner } from './product.js';

const COUNT = Number(process.argv[2] ?? 2000);
const IN_FLIGHT = 64;
const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const message = Buffer.from(
  'From: a@example.com\r\nTo: b@example.org\r\nSubject: bench\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n' +
    'Message-ID: <bench@example.com>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n' +
    'A line of text for the body.\r\n'.repeat(100),
);

async function measure(name: string, signOne: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 50; i++) await signOne(); // warm up (and start the workers)
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < COUNT) await signOne();
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  console.log(`${name.padEnd(40)} ${Math.round(COUNT / seconds).toString().padStart(6)} signatures/s`);
}

const key = { domain: 'example.com', selector: 's1', privateKey: pem };
console.log(`RSA-2048, ${COUNT} messages of ${message.length} bytes, ${availableParallelism()} cores`);
// mailauth reads the keys from signatureData; its typings only know the top-level fields.
const signing = { signingDomain: 'example.com', selector: 's1', privateKey: pem };
const mailauthOptions = { ...signing, canonicalization: 'relaxed/relaxed', signatureData: [signing] };
await measure('mailauth dkimSign (PEM per message)', () => dkimSign(message, mailauthOptions));
const inline = new DkimSigner({ poolSize: 0 });
await measure('DkimSigner, calling thread', () => inline.sign(message, key));
const pooled = new DkimSigner();
await measure(`DkimSigner, pool of ${availableParallelism()}`, () => pooled.sign(message, key));
await pooled.close();
