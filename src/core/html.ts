/** Text made safe to put in HTML, in an element or a quoted attribute. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
