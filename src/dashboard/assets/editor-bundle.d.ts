// The types of editor-bundle.js, which scripts/build-dashboard-editor.mjs
// builds from src/dashboard/editor/entry.js (the bundle is not in git).
export { createEditor } from '../editor/entry.js';
