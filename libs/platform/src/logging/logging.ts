import { RequestMethod } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';
import pino, { type Logger } from 'pino';
import type { AlmanacConfig } from '../config/almanac-config';

/** Probe and scrape requests arrive every few seconds; logging them would drown the rest. */
const QUIET_PATHS = ['/health/live', '/health/ready', '/metrics'];

/**
 * JSON logs (pino) with the role on every line. Credentials in headers are redacted; request
 * bodies are never logged (pino-http does not serialize them), so payloads stay out. TypeORM
 * attaches every bound parameter (job and schedule payloads) to a failed query's error; queries
 * that bypass the persistence `sql()` helper keep them, so `err.parameters` is redacted here too.
 */
/**
 * For components built outside a role (tests, benches, tools) that were given no logger. A role
 * always passes its own: a child of the role's pino logger with `component` set.
 */
export const SILENT_LOGGER: Logger = pino({ level: 'silent' });

export function loggerParams(config: AlmanacConfig, role: string): Params {
  return {
    // nestjs-pino's default route, `{/*splat}`, matches nothing on the Fastify adapter, which
    // silently dropped every request log; `{*splat}` matches every path there.
    forRoutes: [{ path: '{*splat}', method: RequestMethod.ALL }],
    // One field names the part of a role that wrote a line, whichever way it got its logger:
    // `@InjectPinoLogger('hot-routing')`, a pino child `{ component: 'dispatcher' }`, or Nest's own.
    renameContext: 'component',
    pinoHttp: {
      level: config.logLevel,
      base: { role },
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]', 'err.parameters'],
        censor: '[redacted]',
      },
      autoLogging: {
        ignore: (req: IncomingMessage) => {
          // Nest's Fastify middleware sees req.url with the matched route stripped; the full
          // path is in originalUrl there.
          const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url;
          return QUIET_PATHS.some((p) => url === p || url?.startsWith(`${p}?`));
        },
      },
    },
  };
}
