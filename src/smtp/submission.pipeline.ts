import { checkRequestBody, refuseNulCharacters, type Contract } from '../contract/contract.js';
import { AppError } from '../core/errors.js';
import { rateLimitExceeded, type RateAllowance, type RateLimiter } from '../core/rate-limit.js';
import { requireScope } from '../core/scopes.js';
import { SEND_SCOPE, type SubmissionPort, type Submitter } from './submission.listener.js';
import type { AsWritten, SubmittedEmail } from './submitted-message.js';

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
  /** The most recipients an email may have, as POST /v1/emails takes them. */
  maxRecipients: number;
  createEmail(sender: { workspaceId: string; plan: string; mode: 'live' | 'test' }, body: SubmittedEmail, asWritten: AsWritten): Promise<{ id: string }>;
}

/**
 * A session's key holder with the token it authenticated with: a session can
 * last long after AUTH, so each message checks the key again, as each HTTP
 * request does, and a revoked key stops sending at once.
 */
export type SessionKeyHolder<U extends KeyHolder> = U & { token: string };

const OPERATION = 'createEmail';

/**
 * Limits of a request that a message does not have, as an MTA takes it: no
 * Subject (recorded as an empty one), a Subject over 998 characters (the
 * message builder folds it, as the client's was), more than 50 header
 * fields or 20 attachments (the size limit bounds them). Each field, header
 * and attachment is still checked as the API checks it.
 */
const REQUEST_ONLY_LIMITS = { subject: ['minLength', 'maxLength'], headers: ['maxProperties'], attachments: ['maxItems'] };

export function submissionPipeline<U extends KeyHolder>(deps: SubmissionPipelineDeps<U>): SubmissionPort<SessionKeyHolder<U>> {
  const operation = deps.contract.operationWithoutLimits(OPERATION, REQUEST_ONLY_LIMITS);
  return {
    maxRecipients: deps.maxRecipients,
    async authenticate(token) {
      const found = await deps.authenticate(token);
      return found && { ...found, token };
    },
    async send(session, email, asWritten) {
      const user = await deps.authenticate(session.token);
      if (!user) throw new AppError('unauthorized', 'The API key is no longer valid: it was revoked after this session authenticated.');
      requireScope(user.granted, SEND_SCOPE, 'to send');
      const rate = await deps.rateLimiter.take(user.workspaceId, user.mode, deps.plan(user.plan), 1);
      if (!rate.allowed) throw rateLimitExceeded(user.mode, rate);
      checkRequestBody(operation, email);
      refuseNulCharacters(operation, email);
      return deps.createEmail({ workspaceId: user.workspaceId, plan: user.plan, mode: user.mode }, email, asWritten);
    },
  };
}
