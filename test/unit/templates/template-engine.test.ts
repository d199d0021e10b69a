import { describe, expect, it } from 'vitest';
import {
  CompiledCache, compileSource, MAX_FILTERED_ELEMENTS, MAX_ONE_ALLOCATION, MAX_OUTPUT_CHARS, renderSource, RenderFailure,
  type CompiledSource,
} from '../../../src/templates/template-engine.js';

const compiled = (source: { subject?: string; html?: string | null; text?: string | null }): CompiledSource => {
  const result = compileSource({ subject: source.subject ?? '', html: source.html ?? null, text: source.text ?? null });
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.compiled;
};

const failure = (c: CompiledSource, data: Record<string, unknown> = {}): RenderFailure => {
  try {
    renderSource(c, data);
  } catch (err) {
    expect(err).toBeInstanceOf(RenderFailure);
    return err as RenderFailure;
  }
  throw new Error('expected the render to fail');
};

describe('compileSource', () => {
  it('reports every source that does not parse, with its line and column', () => {
    const result = compileSource({ subject: 'Hi {{ name', html: '<p>\n  {% if x %}</p>', text: 'fine {{ x }}' });
    expect(result).toEqual({
      ok: false,
      problems: [
        { part: 'subject', message: 'output "{{ name" not closed', line: 1, column: 4 },
        { part: 'html', message: 'tag {% if x %} not closed', line: 2, column: 3 },
      ],
    });
  });

  it('knows no tag that loads another template or a file', () => {
    for (const tag of ['{% include "x" %}', '{% render "x" %}', '{% layout "x" %}']) {
      const result = compileSource({ subject: '', html: tag, text: null });
      expect(result.ok, tag).toBe(false);
      expect(!result.ok && result.problems[0].message).toMatch(/^tag "(include|render|layout)" not found$/);
    }
  });

  it('refuses a filter it does not know when saving, not when rendering', () => {
    const result = compileSource({ subject: '{{ a | no_such_filter }}', html: null, text: 'x' });
    expect(!result.ok && result.problems[0].message).toBe('undefined filter: no_such_filter');
  });

  it('finds the variables the sources read from outside, where each is first used', () => {
    const c = compiled({
      subject: 'Hi {{ user.name }}',
      html: '{% assign greeting = "Hello" %}{{ greeting }}\n{% for item in items %}{{ item.title }} {{ forloop.index }}{% endfor %}{{ a[b] }}',
      text: '{{ contact.first_name }} {{ user.email }}',
    });
    expect(Object.fromEntries(c.globals)).toEqual({
      user: { part: 'subject', line: 1, column: 7 },
      items: { part: 'html', line: 2, column: 16 },
      a: { part: 'html', line: 2, column: 75 },
      b: { part: 'html', line: 2, column: 77 },
      contact: { part: 'text', line: 1, column: 4 },
    });
  });
});

describe('renderSource', () => {
  it('escapes html output unless the last filter is raw, and leaves subject and text alone', () => {
    const c = compiled({ subject: '{{ x }}', html: '<p>{{ x }}</p>{{ trusted | raw }}', text: '{{ x }}' });
    expect(renderSource(c, { x: '<script>alert("hi")</script>', trusted: '<b>bold</b>' })).toEqual({
      subject: '<script>alert("hi")</script>',
      html: '<p>&lt;script&gt;alert(&#34;hi&#34;)&lt;/script&gt;</p><b>bold</b>',
      text: '<script>alert("hi")</script>',
    });
  });

  it('reads only the data\'s own properties', () => {
    const c = compiled({ subject: '[{{ o.constructor }}][{{ o.__proto__ }}][{{ o.toString }}][{{ o.a }}][{{ s.size }}]' });
    expect(renderSource(c, { o: { a: 1 }, s: 'abc' }).subject).toBe('[][][][1][3]');
  });

  it('renders an undefined variable as nothing', () => {
    expect(renderSource(compiled({ subject: 'Hi {{ who | default: "there" }}{{ nothing }}!' }), {}).subject).toBe('Hi there!');
  });

  it('stops a loop that would run a million times', () => {
    const c = compiled({ subject: '', html: '{% for i in (1..1000) %}{% for j in (1..1000) %}{{ i }}{{ j }}{% endfor %}{% endfor %}' });
    const f = failure(c);
    expect(f.part).toBe('html');
    expect(f.message).toMatch(/limit exceeded/);
    expect(f.overTime).toBe(true);
    expect(f.line).toBe(1);
  });

  it('ends a render sooner when the request has little time left', () => {
    const c = compiled({ subject: '', text: '{% for i in (1..100000) %}{{ i }}{% endfor %}' });
    try {
      renderSource(c, {}, performance.now() + 5);
      throw new Error('expected the render to fail');
    } catch (err) {
      expect((err as RenderFailure).message).toBe('the render time of the request is used up (render limit exceeded)');
    }
  });

  it('refuses output over the size of a part, though no filter allocates it', () => {
    const big = 'x'.repeat(1_000_000);
    const c = compiled({ subject: '', text: `{% for i in (1..${MAX_OUTPUT_CHARS / big.length + 1}) %}{{ big }}{% endfor %}` });
    const f = failure(c, { big });
    expect(f.message).toBe(`output over ${MAX_OUTPUT_CHARS.toLocaleString('en-US')} characters`);
    expect(f.overTime).toBe(false);
  });

  it('refuses an array over the size a filter takes, and reads one element of it all the same', () => {
    const items = Array.from({ length: MAX_FILTERED_ELEMENTS + 1 }, (_, i) => `item ${i}`);
    for (const html of ['{{ items | sort | first }}', '{{ items | where: "name" | size }}', '{{ "" | split: "" | concat: items }}']) {
      const f = failure(compiled({ subject: '', html }), { items });
      expect(f.message).toMatch(/^(sort|where|concat) was given 10,001 elements; a filter takes at most 10,000$/);
      expect(f.overTime).toBe(false);
    }
    const all = compiled({ subject: '{{ items | size }}, {{ items | first }}, {{ items | last }}', text: '{{ some | sort | last }}' });
    expect(renderSource(all, { items, some: items.slice(0, MAX_FILTERED_ELEMENTS) })).toEqual({
      subject: '10001, item 0, item 10000', html: null, text: 'item 9999',
    });
  });

  it('refuses a range or a filter\'s result over one allocation before making it, and takes one of that size', () => {
    const tooLong = "a range or a filter's result of 1,000,001 elements or characters; at most 1,000,000 (memory alloc limit exceeded)";
    const range = failure(compiled({ subject: '', text: `{% assign r = (1..${MAX_ONE_ALLOCATION + 1}) %}{{ r | size }}` }));
    expect([range.message, range.overTime]).toEqual([tooLong, false]);
    const escaped = compiled({ subject: '{% assign e = big | escape %}{{ e | size }}' });
    expect(failure(escaped, { big: 'x'.repeat(MAX_ONE_ALLOCATION + 1) }).message).toBe(tooLong);
    expect(renderSource(escaped, { big: 'x'.repeat(MAX_ONE_ALLOCATION) }).subject).toBe('1000000');
  });

  it('keeps counting allocations across the parts of a message', () => {
    // Each escape of 900,000 characters counts them: eleven are past 10,000,000.
    const sixEscapes = '{% assign e = big | escape %}'.repeat(6);
    const f = failure(compiled({ subject: sixEscapes, text: sixEscapes }), { big: 'x'.repeat(900_000) });
    expect(f.part).toBe('text');
    expect(f.message).toBe('memory alloc limit exceeded');
  });

  it('writes dates in UTC', () => {
    expect(renderSource(compiled({ subject: '{{ at | date: "%Y-%m-%d %H:%M" }}' }), { at: '2026-11-21T23:30:00Z' }).subject).toBe('2026-11-21 23:30');
  });
});

describe('CompiledCache', () => {
  it('drops the least recently used entry past its count or weight', () => {
    const cache = new CompiledCache<string>(2, 100);
    cache.set('a', 'A', 10);
    cache.set('b', 'B', 10);
    expect(cache.get('a')).toBe('A');
    cache.set('c', 'C', 10);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['A', undefined, 'C']);
    cache.set('d', 'D', 95);
    expect([cache.get('a'), cache.get('c'), cache.get('d'), cache.size]).toEqual([undefined, undefined, 'D', 1]);
  });
});
