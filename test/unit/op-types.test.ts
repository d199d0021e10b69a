import { describe, expect, expectTypeOf, it } from 'vitest';
import { op, type OpInput } from '../../src/http/op.js';
import type { PageQuery } from '../../src/store/paging.js';

// op() types a handler's input from the operation id, through the types
// generated from schema/: checked by the compiler (npm run typecheck).

describe('op()', () => {
  it('gives a handler the body, query and path parameters of its operation', () => {
    expectTypeOf<OpInput<'createEmail'>['body']['to']>().toEqualTypeOf<string | string[]>();
    expectTypeOf<OpInput<'getEmail'>['body']>().toEqualTypeOf<undefined>();
    // An optional body reads as {} when absent, so the handler always has one.
    expectTypeOf<OpInput<'publishTemplate'>['body']>().toEqualTypeOf<{ version?: number }>();
    // Path and query parameters are coerced to their schema types.
    expectTypeOf<OpInput<'getEmailAttachment'>['params']>().toEqualTypeOf<{ email_id: string; index: number }>();
    expectTypeOf<OpInput<'listEmails'>['query']['tags']>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<OpInput<'listEmails'>['page']>().toEqualTypeOf<PageQuery>();
    expectTypeOf<OpInput<'getEmail'>['page']>().toEqualTypeOf<undefined>();
  });

  it('does not compile for an operation id that schema/ does not define', () => {
    // @ts-expect-error a misspelt operation id
    const mw = op('createEmial', { scope: 'emails:send' }, () => undefined);
    expect(mw.operationId).toBe('createEmial');
  });
});
