import { RequestMethod } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';
import pino, { type Logger, type TransportSingleOptions } from 'pino';
import type { AlmanacConfig } from '../config/almanac-config';

/**
 * Probe and scrape requests arrive every few seconds, and the API docs page is a page and its
 * assets: logging them would drown the rest. Each path with its query, and /docs with what is under it.
 */
const QUIET_PATHS = ['/health/live', '/health/ready', '/metrics'];
const QUIET_TREES = ['/docs', '/console/assets'];

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

/**
 * Readable lines on a terminal (`npm start`), JSON elsewhere (a log pipeline reads JSON): pino-pretty
 * in pino's transport thread, with the role and component before the message and a request's
 * method, path and status as its message instead of its whole record.
 */
export function logTransport(config: Pick<AlmanacConfig, 'logFormat'>): TransportSingleOptions | undefined {
  if (config.logFormat !== 'pretty') return undefined;
  return { target: 'pino-pretty', options: PRETTY_OPTIONS };
}

export const PRETTY_OPTIONS = {
  colorize: true,
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,role,component,req,res,responseTime',
  messageFormat: '{role}{if component}/{component}{end}: {msg}',
};

export function loggerParams(config: AlmanacConfig, role: string): Params {
  return {
    // nestjs-pino's default route, `{/*splat}`, matches nothing on the Fastify adapter, which
    // silently dropped every request log; `{*splat}` matches every path there.
    forRoutes: [{ path: '{*splat}', method: RequestMethod.ALL }],
    // Probes and scrapes skip the request logger entirely, not just its line: its request context
    // (an AsyncLocalStorage) turns on Node 20's promise hooks for the rest of the process, which
    // cost a worker ~10% of its CPU per job; a worker serves no other route.
    exclude: QUIET_PATHS.map((path) => ({ path: path.slice(1), method: RequestMethod.ALL })),
    // One field names the part of a role that wrote a line, whichever way it got its logger:
    // `@InjectPinoLogger('hot-routing')`, a pino child `{ component: 'dispatcher' }`, or Nest's own.
    renameContext: 'component',
    pinoHttp: {
      level: config.logLevel,
      base: { role },
      transport: logTransport(config),
      // The line says what happened; the record (headers, timings) is still there in JSON.
      customSuccessMessage: (req, res) => `${req.method} ${(req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url} ${res.statusCode}`,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]', 'err.parameters'],
        censor: '[redacted]',
      },
      autoLogging: {
        ignore: (req: IncomingMessage) => {
          // Nest's Fastify middleware sees req.url with the matched route stripped; the full
          // path is in originalUrl there.
          const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url;
          return (
            QUIET_PATHS.some((p) => url === p || url?.startsWith(`${p}?`)) ||
            QUIET_TREES.some((p) => url === p || url?.startsWith(`${p}/`) || url?.startsWith(`${p}?`) || url?.startsWith(`${p}-json`))
          );
        },
      },
    },
  };
}
