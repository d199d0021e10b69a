import { describe, expect, it } from 'vitest';
// @ts-expect-error: the dashboard's modules are plain JavaScript checked on their own (tsconfig.dashboard.json).
import { withPreviewPolicy } from '../../../src/dashboard/assets/preview.js';

// A previewed message loads nothing, this server's own pixel included: its
// HTML gets a policy of its own, before anything of the message, but after
// its doctype, which would otherwise be dropped and the message laid out in
// quirks mode.

const META = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">`;

describe('withPreviewPolicy', () => {
  it('puts the policy first in a message without a doctype', () => {
    for (const html of ['<p>Hi</p>', '<html><head><title>x</title></head><body>Hi</body></html>', '', 'plain words',
      '<!DOCTYPE html', '<p>x</p><!DOCTYPE html>']) {
      expect(withPreviewPolicy(html)).toBe(META + html);
    }
  });

  it('puts the policy right after a leading doctype, whatever its case, and the white space and comments before it', () => {
    const cases: Array<[string, string]> = [
      ['<!DOCTYPE html>', '<html><body>Hi</body></html>'],
      ['<!doctype HTML PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">', '\n<html>Hi</html>'],
      ['\uFEFF \n<!-- saved by an editor -->\n<!DocType html>', '<p>Hi</p>'],
    ];
    for (const [doctype, rest] of cases) expect(withPreviewPolicy(doctype + rest)).toBe(doctype + META + rest);
  });
});
