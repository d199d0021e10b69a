import pino, { type Logger } from 'pino';
import type { LogLevel } from './config.js';

export function createLogger(level: LogLevel): Logger {
  return pino({
    level,
    base: { service: 'mailroom' },
    // Belt and braces: even if a caller logs a whole object, these never reach the log.
    redact: ['req.headers.authorization', '*.token', '*.password', '*.secret', '*.private_key'],
  });
}
