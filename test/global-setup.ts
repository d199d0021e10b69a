import { buildDashboardEditor } from '../scripts/build-dashboard-editor.mjs';

// The dashboard serves a bundle built from source; it is built afresh before
// the tests, so they always run against the editor as it is now.
export default async function setup(): Promise<void> {
  await buildDashboardEditor();
}
