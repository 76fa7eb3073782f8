import type { LoggerService } from '@nestjs/common';
import type { Logger } from 'nestjs-pino';

/** Nest's own boot lines: one per module and per route, and "started". */
const BOOT_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestFactory', 'NestApplication']);

/**
 * Nest's logger for a role: pino's, with Nest's boot chatter moved from info to debug. At info,
 * `npm start` printed some 60 lines of modules and routes that buried its banner; they are still
 * there with ALMANAC_LOG_LEVEL=debug. Everything else passes through unchanged.
 */
export class QuietBootLogger implements LoggerService {
  constructor(private readonly inner: Logger) {}

  log(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    if (typeof context === 'string' && BOOT_CONTEXTS.has(context)) this.inner.debug(message, ...rest);
    else this.inner.log(message, ...rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.inner.error(message, ...rest);
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.inner.warn(message, ...rest);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.inner.debug(message, ...rest);
  }

  verbose(message: unknown, ...rest: unknown[]): void {
    this.inner.verbose(message, ...rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    this.inner.fatal(message, ...rest);
  }
}
