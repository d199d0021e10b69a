import { setTimeout as sleep } from 'node:timers/promises';
import { load, median, type LoadResult } from './lib.js';
import { startBenchSender } from './sends.bench.js';

// A broadcast to 100,000 contacts: how fast its emails are made, to set next
// to the batch-send rate of the same run (both write emails in big shared
// commits), and what reading the emails list costs while it runs. Each round
// is a fresh server with the same audience; the figures are the rounds'
// medians, as a single round moved by a third from run to run.

export const BROADCAST_CONTACTS = Number(process.env.BENCH_BROADCAST_CONTACTS ?? 100_000);
const BULK = 1_000;

export interface BroadcastRound {
  /** Emails made per second, from the send to the broadcast's status sent. */
  emailsPerSecond: number;
  seconds: number;
  /** GET /v1/emails while the broadcast expanded. */
  reads: LoadResult;
}

export interface BroadcastBench {
  contacts: number;
  /** Every round, in the order run. */
  rounds: BroadcastRound[];
  /** Medians of the rounds. */
  emailsPerSecond: number;
  seconds: number;
  readsRps: number;
  readsP50: number;
  readsP99: number;
}

export async function benchBroadcast(rounds: number): Promise<BroadcastBench> {
  const done: BroadcastRound[] = [];
  for (let i = 0; i < rounds; i++) done.push(await broadcastRound());
  return {
    contacts: BROADCAST_CONTACTS,
    rounds: done,
    emailsPerSecond: median(done.map((r) => r.emailsPerSecond)),
    seconds: median(done.map((r) => r.seconds)),
    readsRps: median(done.map((r) => r.reads.rps)),
    readsP50: median(done.map((r) => r.reads.p50)),
    readsP99: median(done.map((r) => r.reads.p99)),
  };
}

async function broadcastRound(): Promise<BroadcastRound> {
  const { mailroom, headers } = await startBenchSender();
  const api = (path: string, body?: unknown) => fetch(`${mailroom.httpUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST', headers, ...(body !== undefined && { body: JSON.stringify(body) }),
  }).then(async (r) => {
    if (!r.ok) throw new Error(`broadcast bench: ${path} answered ${r.status}: ${await r.text()}`);
    return r.json() as Promise<Record<string, unknown>>;
  });
  try {
    for (let start = 0; start < BROADCAST_CONTACTS; start += BULK) {
      await api('/v1/contacts/bulk', { contacts: Array.from({ length: BULK }, (_, i) => ({ email: `reader${start + i}@example.net`, name: `Reader ${start + i}` })) });
    }
    const b = await api('/v1/broadcasts', {
      name: 'Bench', from: 'Bench <news@bench.example>', subject: 'News for {{ contact.first_name }}',
      html: '<p>Hello {{ contact.name }}. ' + 'Lorem ipsum dolor sit amet. '.repeat(20) + '</p>', text: 'Hello {{ contact.name }}.',
    });
    const started = performance.now();
    await api(`/v1/broadcasts/${String(b.id)}/send`, {});
    const reading = load({ url: `${mailroom.httpUrl}/v1/emails?limit=25`, headers, connections: 4, seconds: 8 });
    for (let i = 0; i < 1200; i++) {
      const now = await api(`/v1/broadcasts/${String(b.id)}`);
      if (now.status === 'sent') break;
      if (now.status !== 'sending') throw new Error(`broadcast bench: the broadcast is ${String(now.status)}`);
      await sleep(500);
    }
    const seconds = (performance.now() - started) / 1000;
    const reads = await reading;
    const made = ((await api(`/v1/broadcasts/${String(b.id)}`)).stats as { emails_created: number }).emails_created;
    if (made !== BROADCAST_CONTACTS) throw new Error(`broadcast bench: ${made} emails made for ${BROADCAST_CONTACTS} contacts`);
    return { emailsPerSecond: made / seconds, seconds, reads };
  } finally {
    await mailroom.close();
  }
}
