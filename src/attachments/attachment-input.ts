import { detectMimeType } from 'nodemailer/lib/mime-funcs';
import { AppError } from '../core/errors.js';

// The checks an attachment gets wherever it arrives: uploaded on its own, or
// inline in a send. Errors name the field they are about.

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
// RFC 2045 §5.1 type "/" subtype, tokens only (parameters are not taken).
const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
const CONTROL = /[\u0000-\u001f\u007f]/;

const invalid = (param: string, message: string) => new AppError('validation_error', message, { param });

export function defaultContentType(filename: string): string {
  return detectMimeType(filename) || 'application/octet-stream';
}

export function checkFilename(filename: string, param: string): string {
  const name = filename.trim();
  if (name.length === 0 || CONTROL.test(name) || /[/\\]/.test(name)) {
    throw invalid(param, `'${param}' must be a file name without path separators or control characters.`);
  }
  return name;
}

export function checkContentType(contentType: string, param: string): string {
  if (!CONTENT_TYPE.test(contentType.trim())) throw invalid(param, `'${param}' must be a MIME type such as application/pdf.`);
  return contentType.trim().toLowerCase();
}

/** Strict base64 (line breaks allowed, as MIME writes them); undefined when it is not. */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/[\r\n\t ]/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) return undefined;
  return Buffer.from(compact, 'base64');
}

