import type { Clock } from '../core/clock.js';
import type { DomainSenders, SendingDomain } from '../domains/index.js';

// Looking a sending domain up costs about as much as inserting an email (the
// domains area reads its records and unseals its DKIM keys), and every send
// and every delivery needs one. Active domains are remembered for a moment:
// a domain verified a moment ago is seen at once (misses are not kept), and
// one that stops being active or is removed is still used for at most
// ACTIVE_DOMAIN_CACHE_MS.

export const ACTIVE_DOMAIN_CACHE_MS = 2000;
const MAX_ENTRIES = 10_000;

export function cachedSenders(senders: DomainSenders, clock: Clock): DomainSenders {
  const entries = new Map<string, { domain: SendingDomain; until: number }>();
  return {
    async find(workspaceId, name) {
      const key = `${workspaceId}\n${name}`;
      const now = clock.now();
      const hit = entries.get(key);
      if (hit && hit.until > now) return hit.domain;
      const domain = await senders.find(workspaceId, name);
      if (domain?.status === 'active') {
        if (entries.size >= MAX_ENTRIES) entries.clear();
        entries.set(key, { domain, until: now + ACTIVE_DOMAIN_CACHE_MS });
      } else {
        entries.delete(key);
      }
      return domain;
    },
  };
}
