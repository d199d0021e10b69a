import type { components, operations } from './api-types.js';

// The input of one operation, looked up by its operationId in the types
// generated from schema/. op() hands route handlers their body, query and
// path parameters as these types, and services take request bodies as them
// instead of copies: a field renamed in schema/ breaks the build where it is
// read. They describe the input after validation, defaults filled in.

export type OperationId = keyof operations;

/** A component schema of the contract, by name (`EmailCreate`). */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];
export type SchemaName = keyof components['schemas'];

type JsonContent<B> = [NonNullable<B>] extends [never] ? undefined
  : NonNullable<B> extends { content: { 'application/json': infer J } } ? J : undefined;

/** The JSON request body; undefined for an operation that takes none. An optional body reads as `{}` when absent. */
export type RequestBody<Id extends OperationId> = JsonContent<operations[Id]['requestBody']>;

type ParameterObject<P> = [NonNullable<P>] extends [never] ? Record<never, never> : NonNullable<P>;

/** The query parameters, coerced to their schema types (integers as numbers, arrays as arrays). */
export type QueryParams<Id extends OperationId> = ParameterObject<operations[Id]['parameters']['query']>;

/** The path parameters, coerced like the query's. */
export type PathParams<Id extends OperationId> = ParameterObject<operations[Id]['parameters']['path']>;

/** Whether the operation is a paged list: it takes `limit` (and the cursors with it). */
export type IsPaged<Id extends OperationId> = 'limit' extends keyof QueryParams<Id> ? true : false;
