// Bundles the dashboard's source editor (CodeMirror 6, many ES modules) into
// the one minified file the dashboard serves, editor-bundle.js. Run by
// `prepare` (so `npm ci` makes it) and by the tests' global setup. Written to
// a temporary file and renamed, so a server reading it never sees half a file.
import { build } from 'esbuild';
import { renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const entry = fileURLToPath(new URL('src/dashboard/editor/entry.js', root));
const outfile = fileURLToPath(new URL('src/dashboard/assets/editor-bundle.js', root));

export async function buildDashboardEditor() {
  const result = await build({
    entryPoints: [entry], outfile, write: false, bundle: true, format: 'esm', minify: true, target: 'es2022',
    legalComments: 'eof', logLevel: 'warning',
  });
  const [output] = result.outputFiles;
  const temporary = `${outfile}.${process.pid}.tmp`;
  writeFileSync(temporary, output.contents);
  renameSync(temporary, outfile);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildDashboardEditor();
