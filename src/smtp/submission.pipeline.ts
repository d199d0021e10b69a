import { checkRequestBody, refuseNulCharacters, type Contract } from '../contract/contract.js';
import { rateLimitExceeded, type RateAllowance, type RateLimiter } from '../core/rate-limit.js';
import { requireScope } from '../core/scopes.js';
import { SEND_SCOPE, type SubmissionPort, type Submitter } from './submission.listener.js';
import type { SubmittedEmail } from './submitted-message.js';

// The steps POST /v1/emails takes after authentication, in the same order and
// through the same functions as op() (src/http/op.ts): scope, the
// workspace's request rate, the request schema and its NUL check, then the emails service,
// which checks the domain, suppressions and quotas and writes the events. A
// submitted message is one request.

export interface KeyHolder extends Submitter {
  plan: string;
  mode: 'live' | 'test';
}

export interface SubmissionPipelineDeps<U extends KeyHolder> {
  authenticate(token: string): Promise<U | undefined>;
  contract: Contract;
  rateLimiter: RateLimiter;
  plan(name: string): RateAllowance;
  createEmail(sender: { workspaceId: string; plan: string; mode: 'live' | 'test' }, body: SubmittedEmail, messageId?: string): Promise<{ id: string }>;
}

const OPERATION = 'createEmail';

export function submissionPipeline<U extends KeyHolder>(deps: SubmissionPipelineDeps<U>): SubmissionPort<U> {
  const operation = deps.contract.operation(OPERATION);
  if (!operation?.body) throw new Error(`schema/ has no request body for ${OPERATION}`);
  return {
    authenticate: (token) => deps.authenticate(token),
    async send(user, email, messageId) {
      requireScope(user.granted, SEND_SCOPE, 'to send');
      const rate = await deps.rateLimiter.take(user.workspaceId, user.mode, deps.plan(user.plan), 1);
      if (!rate.allowed) throw rateLimitExceeded(user.mode, rate);
      checkRequestBody(operation, email);
      refuseNulCharacters(operation, email);
      return deps.createEmail({ workspaceId: user.workspaceId, plan: user.plan, mode: user.mode }, email, messageId);
    },
  };
}
