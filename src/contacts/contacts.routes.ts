import Router from '@koa/router';
import { op, type AppState } from '../http/op.js';
import type { ContactsService } from './contacts.service.js';

// HTTP only: each handler is the operation of the same id in schema/.
export function contactsRoutes(contacts: ContactsService): Router<AppState> {
  const r = new Router<AppState>({ prefix: '/v1/contacts' });
  r.get('/', op('listContacts', { scope: 'contacts:read' }, ({ auth, query, page }) =>
    contacts.list(auth.workspaceId, query, page)));
  r.post('/', op('createContact', { scope: 'contacts:write', status: 201, idempotent: true }, ({ auth, body }) =>
    contacts.create(auth.workspaceId, body)));
  // A bulk request of 1000 contacts is one request for the rate limit; its
  // size is bounded by the 1000-item limit instead.
  r.post('/bulk', op('bulkUpsertContacts', { scope: 'contacts:write', idempotent: true, maxBodyBytes: 4 * 1024 * 1024 }, ({ auth, body, check }) =>
    contacts.bulk(auth.workspaceId, body.contacts, (item) => {
      const checked = check('ContactCreate', item);
      return 'problem' in checked ? checked.problem : undefined;
    })));
  r.put('/by-email/:email', op('upsertContactByEmail', { scope: 'contacts:write' }, ({ auth, params, body }) =>
    contacts.upsertByEmail(auth.workspaceId, params.email, body)));
  r.get('/:contact_id', op('getContact', { scope: 'contacts:read' }, ({ auth, params }) =>
    contacts.get(auth.workspaceId, params.contact_id)));
  r.patch('/:contact_id', op('updateContact', { scope: 'contacts:write' }, ({ auth, params, body }) =>
    contacts.update(auth.workspaceId, params.contact_id, body)));
  r.delete('/:contact_id', op('deleteContact', { scope: 'contacts:write', status: 204 }, ({ auth, params }) =>
    contacts.remove(auth.workspaceId, params.contact_id)));
  r.post('/:contact_id/unsubscribe', op('unsubscribeContact', { scope: 'contacts:write' }, ({ auth, params, body }) =>
    contacts.unsubscribe(auth.workspaceId, params.contact_id, body.reason)));
  r.post('/:contact_id/tags/:tag_id', op('addContactTag', { scope: 'contacts:write', status: 204 }, ({ auth, params }) =>
    contacts.addTag(auth.workspaceId, params.contact_id, params.tag_id)));
  r.delete('/:contact_id/tags/:tag_id', op('removeContactTag', { scope: 'contacts:write', status: 204 }, ({ auth, params }) =>
    contacts.removeTag(auth.workspaceId, params.contact_id, params.tag_id)));
  return r;
}
