import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { eventually } from '../helpers/smtp-app.js';

// What a broadcast names (its template, the tags of its audience) stays there
// while it is scheduled or under way: deleting either would leave it sending
// other content, to other contacts, or to no one, with no way to edit it.

const DOMAIN = 'news.test';
const FROM = `Acme News <hello@${DOMAIN}>`;

describe('what a broadcast uses', () => {
  let t: TestApp;

  const tagNamed = async (name: string) => {
    const res = await t.api.post('/v1/tags', { name });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };

  const publishedTemplate = async (alias: string) => {
    const res = await t.api.post('/v1/templates', { name: alias, alias, subject: 'Hello', text: 'Hello there', from: FROM });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await t.api.post(`/v1/templates/${res.body.id}/publish`, {})).status).toBe(200);
    return res.body.id as string;
  };

  const broadcast = async (body: Record<string, unknown>) => {
    const res = await t.api.post('/v1/broadcasts', { name: 'News', ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };

  beforeAll(async () => {
    t = await startTestApp();
    await t.seed.activeDomain(DOMAIN);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('refuses to delete a tag or template a scheduled, sending or paused broadcast uses, naming it, and allows it once cancelled', async () => {
    const held = await tagNamed('held');
    const kept = await tagNamed('kept out');
    for (let i = 0; i < 4; i++) expect((await t.api.post('/v1/contacts', { email: `held${i}@example.com`, tags: ['held'] })).status).toBe(201);
    const byId = await publishedTemplate('by-id');
    const byAlias = await publishedTemplate('by-alias');
    const scheduled = await broadcast({ template: { id: byId }, audience: { tag_ids: [held], exclude_tag_ids: [kept] } });
    expect((await t.api.post(`/v1/broadcasts/${scheduled}/send`, { scheduled_at: 'in 2 hours' })).body.status).toBe('scheduled');
    const paused = await broadcast({ template: { id: 'by-alias' }, audience: { tag_ids: [held] }, send_rate_per_minute: 60 });
    expect((await t.api.post(`/v1/broadcasts/${paused}/send`, {})).body.status).toBe('sending');
    expect((await t.api.post(`/v1/broadcasts/${paused}/pause`, {})).body.status).toBe('paused');

    const refusals: Array<[string, string, string]> = [
      [`/v1/tags/${held}`, 'tag_in_use', scheduled],
      [`/v1/tags/${kept}`, 'tag_in_use', scheduled],
      [`/v1/templates/${byId}`, 'template_in_use', scheduled],
      [`/v1/templates/by-alias`, 'template_in_use', paused],
      [`/v1/templates/${byAlias}`, 'template_in_use', paused],
    ];
    for (const [path, code, broadcastId] of refusals) {
      const res = await t.api.delete(path);
      expect(res.status, path).toBe(422);
      expect(res.body.error).toMatchObject({ code, broadcast_id: broadcastId });
      expect(res.body.error.message).toContain(broadcastId);
    }
    expect((await t.api.get(`/v1/templates/${byAlias}`)).status).toBe(200);
    expect((await t.api.get(`/v1/contacts?tag_id=${held}`)).body.data).toHaveLength(4);

    // Resumed, the paused one goes on to every contact with the template it had.
    expect((await t.api.post(`/v1/broadcasts/${paused}/resume`, {})).status).toBe(200);
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${paused}`)).body.status === 'sent' ? true : undefined), 15_000, 'the broadcast to be sent');
    expect((await t.api.get(`/v1/broadcasts/${paused}`)).body.stats.emails_created).toBe(4);
    expect((await t.api.delete(`/v1/templates/${byAlias}`)).status).toBe(204);

    expect((await t.api.post(`/v1/broadcasts/${scheduled}/cancel`, {})).status).toBe(200);
    for (const path of [`/v1/tags/${held}`, `/v1/tags/${kept}`, `/v1/templates/${byId}`]) expect((await t.api.delete(path)).status, path).toBe(204);
  });

  it('sends every contact the template version published when sending started, whatever is published or renamed meanwhile', async () => {
    const tag = await tagNamed('pinned');
    for (let i = 0; i < 3; i++) expect((await t.api.post('/v1/contacts', { email: `pinned${i}@example.com`, tags: ['pinned'] })).status).toBe(201);
    const templateId = await publishedTemplate('pinned-letter');
    const id = await broadcast({ template: { id: 'pinned-letter' }, audience: { tag_ids: [tag] }, send_rate_per_minute: 60 });
    const sending = await t.api.post(`/v1/broadcasts/${id}/send`, {});
    expect(sending.body).toMatchObject({ status: 'sending', template: { id: templateId, version: 1 } });
    const subjects = async () => ((await t.api.get(`/v1/emails?broadcast_id=${id}&limit=10`)).body.data as Array<{ subject: string }>).map((e) => e.subject);
    await eventually(async () => ((await subjects()).length >= 1 ? true : undefined), 5_000, 'the first email');
    const edited = await t.api.patch(`/v1/templates/${templateId}`, { alias: 'renamed-letter', subject: 'Another letter' });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect((await t.api.post(`/v1/templates/${templateId}/publish`, {})).body.published_version).toBe(2);
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${id}`)).body.status === 'sent' ? true : undefined), 15_000, 'the broadcast to be sent');
    expect(await subjects()).toEqual(['Hello', 'Hello', 'Hello']);
  });

  it('keeps the alias a scheduled broadcast names its template by', async () => {
    const templateId = await publishedTemplate('kept-letter');
    const id = await broadcast({ from: FROM, template: { id: 'kept-letter' } });
    expect((await t.api.post(`/v1/broadcasts/${id}/send`, { scheduled_at: 'in 2 hours' })).body.status).toBe('scheduled');
    for (const alias of ['moved-letter', null]) {
      const refused = await t.api.patch(`/v1/templates/${templateId}`, { alias });
      expect(refused.status).toBe(422);
      expect(refused.body.error).toMatchObject({ code: 'template_in_use', param: 'alias', broadcast_id: id });
    }
    // Its name and content still change; named by its id there, its alias may move.
    expect((await t.api.patch(`/v1/templates/${templateId}`, { name: 'Kept', alias: 'kept-letter', subject: 'Kept' })).status).toBe(200);
    expect((await t.api.patch(`/v1/broadcasts/${id}`, { template: { id: templateId } })).status).toBe(200);
    expect((await t.api.patch(`/v1/templates/${templateId}`, { alias: 'moved-letter' })).body.alias).toBe('moved-letter');
  });

  it('pauses, saying why, a scheduled broadcast whose template no longer renders when it starts, and starts the others due', async () => {
    const tag = await tagNamed('due');
    expect((await t.api.post('/v1/contacts', { email: 'due@example.com', tags: ['due'] })).status).toBe(201);
    const templateId = await publishedTemplate('due-letter');
    const at = new Date(Date.now() + 1_500).toISOString();
    const broken = await broadcast({ template: { id: templateId }, audience: { tag_ids: [tag] } });
    const other = await broadcast({ from: FROM, subject: 'Other', text: 'Other', audience: { tag_ids: [tag] } });
    for (const id of [broken, other]) expect((await t.api.post(`/v1/broadcasts/${id}/send`, { scheduled_at: at })).body.status).toBe('scheduled');
    // Published now, a version that needs a value no broadcast gives.
    const needy = await t.api.patch(`/v1/templates/${templateId}`, { text: '{{ plan }}', variables: [{ key: 'plan', type: 'string', required: true }] });
    expect(needy.status, JSON.stringify(needy.body)).toBe(200);
    expect((await t.api.post(`/v1/templates/${templateId}/publish`, {})).body.published_version).toBe(2);
    const paused = await eventually(async () => {
      const b = (await t.api.get(`/v1/broadcasts/${broken}`)).body;
      return b.status === 'paused' ? b : undefined;
    }, 15_000, 'the broadcast to be paused');
    expect(paused.status_reason).toContain('plan');
    await eventually(async () => ((await t.api.get(`/v1/broadcasts/${other}`)).body.status === 'sent' ? true : undefined), 15_000, 'the other to be sent');
  });

  it('lets a draft lose a tag, and then refuses to send it until its audience is changed, rather than widen or empty it', async () => {
    const member = await tagNamed('members');
    const lapsed = await tagNamed('lapsed');
    expect((await t.api.post('/v1/contacts', { email: 'member@example.com', tags: ['members'] })).status).toBe(201);
    const draft = await broadcast({ from: FROM, subject: 'Hi', text: 'Hi', audience: { tag_ids: [member], exclude_tag_ids: [lapsed] } });
    expect((await t.api.delete(`/v1/tags/${lapsed}`)).status).toBe(204);
    for (const body of [{}, { scheduled_at: 'in 2 hours' }]) {
      const res = await t.api.post(`/v1/broadcasts/${draft}/send`, body);
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'validation_error', param: 'audience.exclude_tag_ids.0' });
    }
    expect((await t.api.get(`/v1/broadcasts/${draft}`)).body.status).toBe('draft');
    expect((await t.api.patch(`/v1/broadcasts/${draft}`, { audience: { tag_ids: [member] } })).status).toBe(200);
    expect((await t.api.post(`/v1/broadcasts/${draft}/send`, { scheduled_at: 'in 2 hours' })).body.status).toBe('scheduled');
  });

  it('never both sends a broadcast and deletes a tag of its audience, asked at the same moment', async () => {
    expect((await t.api.post('/v1/contacts', { email: 'racer@example.com', tags: ['racing'] })).status).toBe(201);
    const racing = ((await t.api.get('/v1/tags')).body.data as Array<{ id: string; name: string }>).find((x) => x.name === 'racing')!.id;
    // Each draft excludes a tag of its own, deleted as it is sent: the send checks its audience, then makes the draft
    // sending some awaits later, and the delete may come in between.
    const races = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const excluded = await tagNamed(`racing ${i}`);
      const draft = await broadcast({ from: FROM, subject: 'Race', text: 'Race', audience: { tag_ids: [racing], exclude_tag_ids: [excluded] } });
      const [sent, deleted] = await Promise.all([t.api.post(`/v1/broadcasts/${draft}/send`, {}), t.api.delete(`/v1/tags/${excluded}`)]);
      return { sent: sent.status, sendError: sent.body.error?.code, deleted: deleted.status, deleteError: deleted.body?.error?.code };
    }));
    for (const race of races) {
      // One of the two wins, and the other says why it lost.
      expect(race.sent === 200 ? race.deleted === 422 && race.deleteError === 'tag_in_use' : race.deleted === 204 && race.sendError === 'validation_error',
        JSON.stringify(race)).toBe(true);
    }
  });

  it('never both sends a broadcast and deletes its template, asked at the same moment', async () => {
    expect((await t.api.post('/v1/contacts', { email: 'template-racer@example.com' })).status).toBe(201);
    const races = await Promise.all(Array.from({ length: 12 }, async (_, i) => {
      const template = await publishedTemplate(`racing-${i}`);
      const draft = await broadcast({ template: { id: template }, audience: { tag_ids: [] } });
      const [sent, deleted] = await Promise.all([t.api.post(`/v1/broadcasts/${draft}/send`, {}), t.api.delete(`/v1/templates/${template}`)]);
      return { sent: sent.status, sendError: sent.body.error, deleted: deleted.status, deleteError: deleted.body?.error?.code };
    }));
    for (const race of races) {
      expect(race.sent === 200 ? race.deleted === 422 && race.deleteError === 'template_in_use'
        : race.deleted === 204 && race.sent === 422 && race.sendError.param === 'template.id', JSON.stringify(race)).toBe(true);
    }
  });
});
