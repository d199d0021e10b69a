import { describe, expect, it } from 'vitest';
import { compileSource } from '../../../src/templates/template-engine.js';
import { bindValues, checkDeclarations, undeclaredUses, type VariableDeclaration } from '../../../src/templates/variables.js';

const declare = (d: Partial<VariableDeclaration> & Pick<VariableDeclaration, 'key' | 'type'>): VariableDeclaration =>
  ({ required: false, fallback: null, ...d });

describe('checkDeclarations', () => {
  it('completes declarations with their defaults', () => {
    expect(checkDeclarations([{ key: 'name', type: 'string' }, { key: 'n', type: 'number', required: true, fallback: 3 }])).toEqual({
      declarations: [declare({ key: 'name', type: 'string' }), declare({ key: 'n', type: 'number', required: true, fallback: 3 })],
      problems: [],
    });
  });

  it('names every bad declaration', () => {
    const { problems } = checkDeclarations([
      { key: '1st', type: 'string' }, { key: 'contact', type: 'object' }, { key: 'empty', type: 'string' },
      { key: 'a', type: 'string' }, { key: 'a', type: 'number' }, { key: 'items', type: 'list', fallback: {} },
      { key: 'count', type: 'number', fallback: Number.NaN },
    ]);
    expect(problems.map((p) => p.param)).toEqual([
      'variables.0.key', 'variables.1.key', 'variables.2.key', 'variables.4.key', 'variables.5.fallback', 'variables.6.fallback',
    ]);
  });
});

describe('undeclaredUses', () => {
  it('names the undeclared, not contact nor unsubscribe_url, each where it is first used', () => {
    const parsed = compileSource({ subject: '{{ name }}', html: '<a href="{{ unsubscribe_url }}">x</a>\n{{ contact.name }} {{ plan }}', text: null });
    if (!parsed.ok) throw new Error('does not parse');
    expect(undeclaredUses(parsed.compiled, [declare({ key: 'name', type: 'string' })])).toEqual([{
      param: 'html', line: 2, column: 23, variable: 'plan', message: "html, line 2, column 23: 'plan' is used but not declared in variables.",
    }]);
  });
});

describe('bindValues', () => {
  const declarations = [
    declare({ key: 'name', type: 'string', required: true }),
    declare({ key: 'count', type: 'number', fallback: 1 }),
    declare({ key: 'vip', type: 'boolean' }),
    declare({ key: 'items', type: 'list' }),
    declare({ key: 'account', type: 'object' }),
  ];

  it('passes declared values, fills fallbacks and drops undeclared names', () => {
    expect(bindValues(declarations, { name: 'Ann', vip: false, items: [1], account: { id: 'a' }, other: 'x' }, 'variables', false)).toEqual({
      data: { name: 'Ann', count: 1, vip: false, items: [1], account: { id: 'a' } }, problems: [],
    });
    expect(bindValues(declarations, { name: 'Ann', count: null }, 'variables', false).data).toEqual({ name: 'Ann', count: 1 });
  });

  it('names every missing or mistyped value', () => {
    const { problems } = bindValues(declarations, { count: '3', vip: 'yes', items: {}, account: [] }, 'template.variables', false);
    expect(problems).toEqual([
      { param: 'template.variables.name', message: "'name' is required by the template." },
      { param: 'template.variables.count', message: "'count' must be a number, not a string." },
      { param: 'template.variables.vip', message: "'vip' must be a boolean, not a string." },
      { param: 'template.variables.items', message: "'items' must be a list, not a object." },
      { param: 'template.variables.account', message: "'account' must be a object, not a list." },
    ]);
  });

  it('takes contact and unsubscribe_url only as sample values', () => {
    const values = { name: 'Ann', contact: { first_name: 'Ann' }, unsubscribe_url: 'https://x.test/u/1' };
    expect(bindValues(declarations, values, 'variables', true).data).toMatchObject({ contact: { first_name: 'Ann' }, unsubscribe_url: 'https://x.test/u/1' });
    expect(bindValues(declarations, values, 'template.variables', false).problems.map((p) => p.param))
      .toEqual(['template.variables.contact', 'template.variables.unsubscribe_url']);
  });
});
