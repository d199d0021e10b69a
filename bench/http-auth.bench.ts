import { startBareKoa, startBenchMailroom, compare, load } from './lib.js';

/** Authenticated cheap GET (list one API key) against a bare Koa route answering the same JSON. */
export async function benchAuthenticatedGet(rounds: number) {
  const bare = await startBareKoa((ctx) => { ctx.body = { data: [], has_more: false }; });
  const mailroom = await startBenchMailroom();
  try {
    const ws = await mailroom.services.workspaces.ensureDefault();
    const { token } = await mailroom.services.apiKeys.create({ workspaceId: ws.id, name: 'bench' });
    const headers = { Authorization: `Bearer ${token}` };
    return await compare('authenticated GET /v1/api-keys?limit=1 vs bare Koa', rounds,
      () => load({ url: `${bare.url}/v1/api-keys?limit=1`, headers }),
      () => load({ url: `${mailroom.httpUrl}/v1/api-keys?limit=1`, headers }));
  } finally {
    await mailroom.close();
    bare.close();
  }
}
