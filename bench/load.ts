// A closed-loop HTTP load generator, run as its own process so it does not
// share the event loop with the server it measures. Bounded by request count
// and by time; prints one JSON line of results. Given several URLs (the
// nodes of one deployment), it spreads the connections over them in turn, as
// a TCP load balancer would.
import http from 'node:http';

interface Args { url: string | string[]; connections: number; seconds: number; maxRequests: number; headers: Record<string, string>; method: string; body?: string }

const args = JSON.parse(process.argv[2]) as Args;
const urls = [args.url].flat();
const agent = new http.Agent({ keepAlive: true, maxSockets: args.connections });
const latencies: number[] = [];
let errors = 0;
let sent = 0;
const statuses: Record<number, number> = {};
const deadline = performance.now() + args.seconds * 1000;

function once(url: string): Promise<void> {
  return new Promise((resolve) => {
    const start = performance.now();
    const req = http.request(url, { method: args.method, agent, headers: args.headers }, (res) => {
      res.resume();
      res.on('end', () => {
        statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
        if ((res.statusCode ?? 500) >= 400) errors++;
        latencies.push(performance.now() - start);
        resolve();
      });
    });
    req.on('error', () => { errors++; resolve(); });
    req.end(args.body);
  });
}

async function worker(url: string): Promise<void> {
  while (performance.now() < deadline && sent < args.maxRequests) {
    sent++;
    await once(url);
  }
}

const started = performance.now();
const cpuAtStart = process.cpuUsage();
await Promise.all(Array.from({ length: args.connections }, (_, i) => worker(urls[i % urls.length])));
const elapsed = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuAtStart);
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
console.log(JSON.stringify({ requests: latencies.length, errors, statuses, rps: latencies.length / elapsed, p50: pct(0.5), p99: pct(0.99),
  cpuMsPerRequest: (cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length) }));
agent.destroy();
