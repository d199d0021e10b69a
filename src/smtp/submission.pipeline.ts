import type { Plan } from '../config.js';
import { AppError } from '../core/errors.js';
import { describeAjvError, type Contract } from '../contract/contract.js';
import type { RateLimiter } from '../http/rate-limit.js';
import type { SubmissionPort, Submitter } from './submission.listener.js';
import type { SubmittedEmail } from './submitted-message.js';

// The steps POST /v1/emails takes after authentication, in the same order
// (src/http/op.ts): scope, the workspace's request rate, the request schema,
// then the emails service, which checks the domain, suppressions and quotas
// and writes the events. A submitted message is one request.

export interface KeyHolder extends Submitter {
  plan: string;
  mode: 'live' | 'test';
}

export interface SubmissionPipelineDeps<U extends KeyHolder> {
  authenticate(token: string): Promise<U | undefined>;
  contract: Contract;
  rateLimiter: RateLimiter;
  plan(name: string): Plan;
  createEmail(sender: { workspaceId: string; plan: string; mode: 'live' | 'test' }, body: SubmittedEmail, messageId?: string): Promise<{ id: string }>;
}

const OPERATION = 'createEmail';
const SCOPE = 'emails:send';

export function submissionPipeline<U extends KeyHolder>(deps: SubmissionPipelineDeps<U>): SubmissionPort<U> {
  const validate = deps.contract.operation(OPERATION)?.body;
  if (!validate) throw new Error(`schema/ has no request body for ${OPERATION}`);
  return {
    authenticate: (token) => deps.authenticate(token),
    async send(user, email, messageId) {
      if (!user.granted.has(SCOPE)) throw new AppError('forbidden', `This API key lacks the '${SCOPE}' scope needed to send.`);
      const rate = deps.rateLimiter.take(user.workspaceId, user.mode, deps.plan(user.plan), 1);
      if (!rate.allowed) {
        throw new AppError('rate_limit_exceeded', `Too many requests for this workspace's ${user.mode} allowance; retry after ${rate.retryAfterSeconds} s.`);
      }
      if (!validate(email)) {
        const e = describeAjvError(validate.errors?.[0], 'body');
        throw new AppError('validation_error', e.message, { param: e.param });
      }
      return deps.createEmail({ workspaceId: user.workspaceId, plan: user.plan, mode: user.mode }, email, messageId);
    },
  };
}
