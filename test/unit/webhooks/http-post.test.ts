import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, RESPONSE_EXCERPT_BYTES, type PostOptions } from '../../../src/webhooks/http-post.js';

// What a webhook endpoint's answer becomes, whatever it sends: a raw TCP
// server on loopback writes the bytes of the response as the test gives them.

const OPTIONS: PostOptions = { allowPrivate: true, resolveHost: async () => [{ address: '127.0.0.1', family: 4 }] };

describe('postJson against an endpoint that answers oddly', () => {
  const servers: Array<{ server: net.Server; sockets: Set<net.Socket> }> = [];
  afterEach(async () => {
    for (const { server, sockets } of servers.splice(0)) {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  /** An endpoint that reads the request and then does what `answer` says; it counts its connections. */
  async function endpoint(answer: (socket: net.Socket) => void) {
    const sockets = new Set<net.Socket>();
    let connections = 0;
    const server = net.createServer((socket) => {
      connections += 1;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      socket.once('data', () => answer(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push({ server, sockets });
    const { port } = server.address() as net.AddressInfo;
    return { url: `http://127.0.0.1:${port}/hook`, get connections() { return connections; } };
  }

  const post = (url: string, options: Partial<PostOptions> = {}) => postJson(url, {}, '{}', { ...OPTIONS, ...options });

  it('does not follow a redirect: the 3xx is the answer, and its target hears nothing', async () => {
    const target = await endpoint((s) => s.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    const redirecting = await endpoint((s) => s.end(`HTTP/1.1 302 Found\r\nlocation: ${target.url}\r\ncontent-length: 0\r\n\r\n`));
    expect(await post(redirecting.url)).toMatchObject({ status: 302, error: null });
    expect(target.connections).toBe(0);
  });

  it('gives up on a response that never ends at the deadline', async () => {
    const dripping = await endpoint((s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nab'));
    const started = Date.now();
    expect(await post(dripping.url, { timeoutMs: 300 })).toMatchObject({ status: null, error: 'no complete response within 0.3 s', responseBody: null });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('keeps the first KiB of a huge body, with a NUL as U+FFFD', async () => {
    const huge = await endpoint((s) => {
      s.write('HTTP/1.1 500 Oops\r\ncontent-length: 10000000\r\n\r\nok\0');
      s.write(Buffer.alloc(5_000_000, 'a'));
    });
    const result = await post(huge.url);
    expect(result.status).toBe(500);
    expect(result.responseBody).toBe(`ok\uFFFD${'a'.repeat(RESPONSE_EXCERPT_BYTES - 3)}`);
  });

  it('reports a status line that is not HTTP as an error without a status', async () => {
    const odd = await endpoint((s) => s.end('HTTP/1.1 2000 Weird\r\ncontent-length: 0\r\n\r\n'));
    expect(await post(odd.url)).toMatchObject({ status: null, error: expect.stringMatching(/^Parse Error/), responseBody: null });
  });
});
