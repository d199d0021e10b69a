// `npm run bench:profile -- <get|sends|batch|delivery|delivery-html> [--out FILE.cpuprofile]`:
// one of the bench's loads, run as the bench runs it, with V8's sampling
// profiler on the Mailroom server's event loop (this process) around the
// counted load only, after the bench's warm-up rounds. Prints the server's CPU per
// request or message and the loop's busy share, the self time grouped into
// the categories of CATEGORIES below, and the functions with the most self
// time. See "Profiling" in bench/README.md.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Session, type Profiler } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { DELIVERY_WARM_UP_ROUNDS, deliverRound, startDeliveryTargets } from './delivery.bench.js';
import { fmt, load } from './lib.js';
import { BATCH_SIZE, EMAIL, batchBody, startBenchSender } from './sends.bench.js';

/** One sample every 500 µs, as the README's profiles were taken. */
const SAMPLING_INTERVAL_US = 500;
/** Seconds of the counted HTTP load (the warm-up round runs the bench's 3). */
const PROFILED_SECONDS = 5;
const TOP_FUNCTIONS = 25;
const REPO = fileURLToPath(new URL('..', import.meta.url));

type Frame = Profiler.ProfileNode['callFrame'];

/** Native functions of better-sqlite3's statements and database, as V8 names them. */
const SQLITE_CALLS = /^(run|all|get|iterate|exec|prepare|pluck|raw|expand|columns|bind|safeIntegers|Statement)$/;
const HTTP_CODE = /^node:_http_|node_modules\/(koa|@koa\/router|koa-compose|delegates|on-finished|statuses|type-is|content-type|accepts|vary|http-errors|cookies|path-to-regexp|encodeurl|escape-html|fresh|parseurl)\/|src\/http\/app\.ts/;

/**
 * Where self time goes, first match wins. A rule matches a frame by its url
 * and function name; `native` rules match only frames of no script: V8's
 * own, like "(garbage collector)", and native functions called from JS,
 * like better-sqlite3's `run` or a socket's `writev`. `caller` narrows a
 * rule to frames whose caller matches, `within` to frames with any caller
 * up the stack that matches (as "url functionName"). A native function no
 * rule takes counts with its nearest caller that a rule takes (a socket
 * write with the SMTP client or HTTP, a hash update with DKIM); anything
 * else is "the rest": Node's internals, promise jobs, libraries not named.
 */
const CATEGORIES: Array<{ category: string; url?: RegExp; name?: RegExp; native?: true; caller?: RegExp; within?: RegExp }> = [
  { category: 'idle', native: true, name: /^\(idle\)$/ },
  { category: 'garbage collection', native: true, name: /^\(garbage collector\)$/ },
  { category: '(program): V8 and native code outside JS frames', native: true, name: /^\(program\)$/ },
  // A group commit's COMMIT writes its pages to the WAL; the fsync runs off the loop, the loop only starts it.
  { category: 'SQLite: the commit (WAL write, fsync started)', native: true, name: SQLITE_CALLS, caller: /sqlite-driver/, within: /commitTransaction/ },
  { category: 'SQLite: the commit (WAL write, fsync started)', native: true, name: /^fdatasync$/ },
  { category: 'SQLite: statements', native: true, name: SQLITE_CALLS, caller: /src\/store\/db\.ts|node_modules\/(kysely|better-sqlite3)\// },
  { category: 'SQLite: statements', url: /node_modules\/better-sqlite3\// },
  { category: 'HTTP: Node, Koa, router', url: HTTP_CODE },
  { category: 'request checks: op(), ajv, key, rate limit', url: /src\/http\/op\.ts|src\/core\/rate-limit\.ts|src\/api-keys\/|node_modules\/(ajv|ajv-formats|fast-uri)\// },
  // ajv's compiled validators are made by new Function: code without a url.
  { category: 'request checks: op(), ajv, key, rate limit', url: /^$/, name: /^validate\d*$/ },
  { category: 'SMTP client', url: /src\/delivery\/smtp-client\.ts/ },
  { category: 'MIME: mime.ts, quoted-printable.ts, nodemailer', url: /src\/delivery\/(mime|quoted-printable)\.ts|node_modules\/nodemailer\// },
  { category: 'DKIM', url: /src\/delivery\/dkim\.ts/ },
  { category: 'DKIM', url: /^node:internal\/crypto\//, within: /src\/delivery\/dkim\.ts/ },
  { category: 'Kysely', url: /node_modules\/kysely\// },
  { category: 'worker, queue, outcomes', url: /src\/delivery\/|src\/emails\/outcomes\.ts|src\/store\/lease\.ts/ },
  { category: "the store's own code", url: /src\/store\// },
  { category: 'emails code', url: /src\/emails\// },
  { category: 'other Mailroom code (src/)', url: /src\// },
];

const THE_REST = 'the rest';

function ruleCategoryOf(frame: Frame, callers: Frame[]): string | undefined {
  // V8's own frames and native functions belong to no script.
  const native = frame.scriptId === '0';
  return CATEGORIES.find((rule) => (!rule.native || native)
    && (!rule.url || rule.url.test(frame.url))
    && (!rule.name || rule.name.test(frame.functionName))
    && (!rule.caller || (callers.length > 0 && rule.caller.test(`${callers[0].url} ${callers[0].functionName}`)))
    && (!rule.within || callers.some((c) => rule.within!.test(`${c.url} ${c.functionName}`))))?.category;
}

/** `callers`: the frames up the stack, nearest first. */
function categoryOf(frame: Frame, callers: Frame[]): string {
  const own = ruleCategoryOf(frame, callers);
  if (own || frame.scriptId !== '0' || frame.functionName.startsWith('(')) return own ?? THE_REST;
  for (const [i, caller] of callers.entries()) {
    const category = caller.scriptId === '0' ? undefined : ruleCategoryOf(caller, callers.slice(i + 1));
    if (category) return category;
  }
  return THE_REST;
}

/** Frames of the compiled dist/ that moveToSources has moved to their place in src/. */
const inSources = new WeakSet<Frame>();

/**
 * Moves every frame of Mailroom's compiled code (dist/, what the bench runs)
 * to its place in the TypeScript source through the build's source maps, so
 * that rules, totals and locations read src/.
 */
function moveToSources(profile: Profiler.Profile): void {
  const dist = pathToFileURL(join(REPO, 'dist/')).href;
  for (const { callFrame: frame } of profile.nodes) {
    if (!frame.url.startsWith(dist)) continue;
    const entry = findSourceMap(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber);
    if (!entry || !('originalSource' in entry)) continue;
    Object.assign(frame, { url: entry.originalSource, lineNumber: entry.originalLine, columnNumber: entry.originalColumn });
    inSources.add(frame);
  }
}

/** `file:line` of a frame, relative to the repo, in the TypeScript source where a source map says it. */
function locationOf(frame: Frame): string {
  if (frame.url === '') return '(generated code)';
  if (!frame.url.startsWith('file:')) return `${frame.url}:${frame.lineNumber + 1}`;
  const map = inSources.has(frame) ? undefined : findSourceMap(frame.url);
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
  const mapped = entry && 'originalSource' in entry ? { file: entry.originalSource, line: entry.originalLine } : { file: frame.url, line: frame.lineNumber };
  const path = mapped.file.startsWith('file:') ? fileURLToPath(mapped.file) : mapped.file;
  // node_modules is a link in some checkouts: name a package's file from there.
  const shown = path.includes('/node_modules/') ? path.slice(path.lastIndexOf('/node_modules/') + 1) : relative(REPO, path);
  return `${shown}:${mapped.line + 1}`;
}

/** A function and where it is; a native one by the function that called it. */
function describe(frame: Frame, caller: Frame | undefined): string {
  const name = (f: Frame) => f.functionName || '(anonymous)';
  if (frame.scriptId !== '0') return `${name(frame)}  ${locationOf(frame)}`;
  return caller ? `${name(frame)} (native) from ${name(caller)}  ${locationOf(caller)}` : name(frame);
}

/** Runs `work` under the sampling profiler, with the event loop's utilisation over the same span. */
async function profiled<T>(work: () => Promise<T>): Promise<{ result: T; profile: Profiler.Profile; loopBusy: number }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_INTERVAL_US });
    const elu = performance.eventLoopUtilization();
    await session.post('Profiler.start');
    const outcome = await work().then((result) => ({ result }), (error: unknown) => ({ error }));
    const { profile } = await session.post('Profiler.stop');
    const loopBusy = performance.eventLoopUtilization(elu).utilization;
    if ('error' in outcome) throw outcome.error;
    return { result: outcome.result, profile, loopBusy };
  } finally {
    session.disconnect();
  }
}

interface Run {
  title: string;
  /** The load's own figures: rate, latency, CPU per request or message. */
  figures: string;
  profile: Profiler.Profile;
  loopBusy: number;
}

/**
 * POST `path` with `body` (GET it without one) to a Mailroom ready to send
 * (the sends bench's), a warm-up round, then the profiled one.
 */
async function profileHttp(o: { path: string; body?: string; connections: number; emailsPerRequest: number }): Promise<Run> {
  const { mailroom, headers } = await startBenchSender();
  const method = o.body === undefined ? 'GET' : 'POST';
  try {
    const request = { method, body: o.body, headers, connections: o.connections, url: `${mailroom.httpUrl}${o.path}` };
    const warmUp = await load(request);
    const { result, profile, loopBusy } = await profiled(() => load({ ...request, seconds: PROFILED_SECONDS }));
    const bad = [warmUp, result].find((r) => r.errors > 0);
    if (bad) throw new Error(`${o.path}: the load saw errors ${JSON.stringify(bad.statuses)}`);
    const perEmail = o.emailsPerRequest > 1 ? ` (${fmt((result.cpuMsPerRequest / o.emailsPerRequest) * 1000, 1)} µs an email)` : '';
    return {
      title: `${method} ${o.path}, ${o.connections} connections, ${PROFILED_SECONDS} s`,
      figures: `${fmt(result.requests)} requests, ${fmt(result.rps)} req/s, p99 ${fmt(result.p99, 1)} ms; ${fmt(result.cpuMsPerRequest, 3)} ms CPU a request${perEmail}`,
      profile, loopBusy,
    };
  } finally {
    await mailroom.close();
  }
}

/** The delivery bench's Mailroom round through dnsmasq to smtp-sink, its warm-up rounds, then the profiled one. */
async function profileDelivery(o: { messages: number; content: 'text' | 'html'; bytes: number }): Promise<Run> {
  const targets = await startDeliveryTargets(1);
  try {
    for (let i = 0; i < DELIVERY_WARM_UP_ROUNDS; i++) await deliverRound(targets, o);
    let run: Awaited<ReturnType<typeof profiled>> | undefined;
    const round = await deliverRound(targets, o, async (timed) => {
      run = await profiled(timed);
    });
    return {
      title: `delivery of ${fmt(o.messages)} queued emails of ${fmt(o.bytes / 1024)} KB of ${o.content}, DKIM RSA-2048 + Ed25519, MX through dnsmasq, to smtp-sink`,
      figures: `${fmt(o.messages / round.seconds)} msg/s; ${fmt(round.cpuMs / o.messages, 3)} ms CPU a message`,
      profile: run!.profile, loopBusy: run!.loopBusy,
    };
  } finally {
    await targets.stop();
  }
}

const MODES: Record<string, () => Promise<Run>> = {
  sends: () => profileHttp({ path: '/v1/emails', body: JSON.stringify(EMAIL), connections: 64, emailsPerRequest: 1 }),
  get: () => profileHttp({ path: '/v1/api-keys?limit=1', connections: 32, emailsPerRequest: 1 }),
  batch: () => profileHttp({ path: '/v1/emails/batch', body: batchBody(), connections: 8, emailsPerRequest: BATCH_SIZE }),
  delivery: () => profileDelivery({ messages: 2000, content: 'text', bytes: 2048 }),
  'delivery-html': () => profileDelivery({ messages: 1000, content: 'html', bytes: 30_000 }),
};

/** Self samples by category and by function, of the samples in which the loop was busy. */
function selfTime(profile: Profiler.Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const callers = (id: number) => {
    const frames: Frame[] = [];
    for (let p = parentOf.get(id); p !== undefined; p = parentOf.get(p)) frames.push(byId.get(p)!.callFrame);
    return frames;
  };
  const samplesOf = new Map<number, number>();
  for (const id of profile.samples ?? []) samplesOf.set(id, (samplesOf.get(id) ?? 0) + 1);
  const categories = new Map<string, number>();
  const functions = new Map<string, { frame: Frame; caller?: Frame; category: string; samples: number }>();
  let busy = 0;
  for (const [id, samples] of samplesOf) {
    const { callFrame } = byId.get(id)!;
    const up = callers(id);
    const category = categoryOf(callFrame, up);
    if (category === 'idle') continue;
    busy += samples;
    categories.set(category, (categories.get(category) ?? 0) + samples);
    // A native function is told apart by its caller (the nearest outside Node's own modules, if any):
    // better-sqlite3's `run` from a statement or from the commit, a socket write from the SMTP client.
    const scripted = callFrame.scriptId === '0' ? up.filter((f) => f.scriptId !== '0') : [];
    const caller = scripted.find((f) => !f.url.startsWith('node:')) ?? scripted[0];
    const key = [category, ...[callFrame, caller].flatMap((f) => (f ? [f.functionName, f.url, f.lineNumber, f.columnNumber] : []))].join('\0');
    const entry = functions.get(key) ?? functions.set(key, { frame: callFrame, caller, category, samples: 0 }).get(key)!;
    entry.samples += samples;
  }
  return { total: profile.samples?.length ?? 0, busy, categories, functions: [...functions.values()].sort((a, b) => b.samples - a.samples) };
}

/**
 * Total time of Mailroom's own functions (src/): the busy samples in which
 * each is on the stack, counted once a sample however deep it recurses.
 * Where self time shows what the loop was doing, this shows on whose behalf.
 */
function totalTimeOfOwnCode(profile: Profiler.Profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const totals = new Map<string, number>();
  for (const id of profile.samples ?? []) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const onStack = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (frame.url.includes('/src/')) onStack.add(describe(frame, undefined));
    }
    for (const fn of onStack) totals.set(fn, (totals.get(fn) ?? 0) + 1);
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
}

function commitOfCheckout(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: REPO, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string' } } });
const mode = positionals[0];
if (positionals.length !== 1 || !Object.hasOwn(MODES, mode)) {
  console.error(`usage: npm run bench:profile -- <${Object.keys(MODES).join('|')}> [--out FILE.cpuprofile]`);
  process.exit(2);
}
const run = await MODES[mode]();
if (values.out) writeFileSync(values.out, JSON.stringify(run.profile));
moveToSources(run.profile);
const { total, busy, categories, functions } = selfTime(run.profile);
const share = (samples: number) => `${fmt((samples / busy) * 100, 1).padStart(5)}%`;
const order = [...new Set([...CATEGORIES.map((c) => c.category), THE_REST])].filter((c) => categories.has(c));
console.log(`${run.title}
commit ${commitOfCheckout()}, node ${process.version}, one sample every ${SAMPLING_INTERVAL_US} µs on the event loop (the profiler adds its own cost to the CPU figures)
server: ${run.figures} (process.cpuUsage, every thread); event loop busy ${fmt(run.loopBusy * 100, 1)}% (eventLoopUtilization)
samples: ${fmt(total)}, ${fmt(busy)} busy

self time by category, share of the busy samples:
${order.map((c) => `  ${share(categories.get(c)!)}  ${c}`).join('\n')}

top ${TOP_FUNCTIONS} functions by self time, share of the busy samples:
${functions.slice(0, TOP_FUNCTIONS).map((f) => `  ${share(f.samples)}  ${describe(f.frame, f.caller)}  [${f.category}]`).join('\n')}

top ${TOP_FUNCTIONS} of Mailroom's functions (src/) by total time, self and callees, share of the busy samples:
${totalTimeOfOwnCode(run.profile).slice(0, TOP_FUNCTIONS).map(([fn, samples]) => `  ${share(samples)}  ${fn}`).join('\n')}${values.out ? `\n\nprofile written to ${values.out} (open it in Chrome DevTools, Performance panel)` : ''}`);
