import { describe, expect, it } from 'vitest';
import { compileSource } from '../../../src/templates/template-engine.js';
import {
  bindValues, checkDeclarations, contactFieldsWritten, emptyFields, undeclaredUses, type VariableDeclaration,
} from '../../../src/templates/variables.js';

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

describe('contactFieldsWritten', () => {
  const written = (source: { subject: string; html?: string; text?: string }) => {
    const parsed = compileSource({ subject: source.subject, html: source.html ?? null, text: source.text ?? null });
    if (!parsed.ok) throw new Error('does not parse');
    return contactFieldsWritten(parsed.compiled);
  };

  it('names each contact field written out, once, in the order the subject, the html and the text first write it', () => {
    expect(written({
      subject: 'Hi {{ contact.first_name }}',
      html: '<p>{{ contact.properties.company | upcase }} {{ contact.first_name }}</p>{{ unsubscribe_url }}',
      text: '{{ "Dear " | append: contact.name }}{% liquid\necho contact.properties.city\n%}',
    })).toEqual(['contact.first_name', 'contact.properties.company', 'contact.name', 'contact.properties.city']);
  });

  it('leaves out a field written with a default, and one written where a tag tests it', () => {
    expect(written({
      subject: 'Hi {{ contact.first_name | default: "there" }}, {{ contact.last_name | strip | default: "" }}',
      html: '{% if contact.name %}<p>{{ contact.name }}</p>{% else %}<p>Hello</p>{% endif %}'
        + '{% unless contact.properties.plan == blank %}{{ contact.properties.plan }}{% endunless %}'
        + '{% case contact.properties.tier %}{% when "gold" %}{{ contact.properties.tier }}{% endcase %}',
      text: '{% if contact.name %}{{ contact.email }}{% endif %}',
    })).toEqual(['contact.email']);
  });

  it('does not name a field only tested, and cuts a path where a variable names its part', () => {
    expect(written({ subject: '{% if contact.first_name %}Hi{% endif %}{% for i in (1..2) %}{{ i }}{% endfor %}' })).toEqual([]);
    expect(written({ subject: '{% assign k = "plan" %}{{ contact.properties[k] }}' })).toEqual(['contact.properties']);
  });
});

describe('emptyFields', () => {
  const data = { contact: { first_name: 'Ann', last_name: '  ', name: 'Ann', email: 'ann@example.com', properties: { seats: 0, vip: false, note: null } } };

  it('names the fields missing, null or only white space, in the order given', () => {
    expect(emptyFields([
      'contact.properties.company', 'contact.first_name', 'contact.last_name', 'contact.properties.note', 'contact.properties.seats',
      'contact.properties.vip', 'contact.properties.company.name', 'contact.email',
    ], data)).toEqual(['contact.properties.company', 'contact.last_name', 'contact.properties.note', 'contact.properties.company.name']);
  });

  it('does not call empty what Liquid reads of a value (its size) nor an object written whole', () => {
    expect(emptyFields(['contact.first_name.size', 'contact.properties'], data)).toEqual([]);
  });
});
