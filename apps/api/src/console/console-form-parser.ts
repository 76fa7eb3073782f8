import { Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { errorCodes, type FastifyInstance } from 'fastify';
import { routedPath } from '../http/api-exception.filter';
import { isConsolePath } from './console-viewer';

/** A console form is a sign-in or a button: anything larger is not one. */
const MAX_FORM_BYTES = 4096;

/**
 * Reads the console's HTML forms (application/x-www-form-urlencoded) into a flat object. Only
 * under /console: every other route stays JSON-only (a form body elsewhere is still a 415), and
 * it is one parser call, so no plugin (@fastify/formbody would apply to every route).
 */
@Injectable()
export class ConsoleFormParser implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    // Before Fastify reads a body (up to its 4 MiB limit, in any content type): a console body
    // is a form of a few hundred bytes, and its credentials (a cookie, or the sign-in's secret)
    // are checked only after the body is parsed.
    fastify.addHook('onRequest', async (req, reply) => {
      if (!isConsolePath(routedPath(req))) return undefined;
      const length = req.headers['content-length'];
      const chunked = length === undefined && req.headers['transfer-encoding'] !== undefined;
      if (!chunked && (length === undefined || Number(length) <= MAX_FORM_BYTES)) return undefined;
      return reply.code(413).headers({ Connection: 'close' }).type('text/plain').send(`a console form is at most ${MAX_FORM_BYTES} bytes`);
    });
    fastify.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (req, body, done) => {
        if (!isConsolePath(routedPath(req))) {
          // The very error Fastify gives a content type it has no parser for, so the API's
          // answer to a form body is what it was before the console existed.
          done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(req.headers['content-type']), undefined);
          return;
        }
        const text = typeof body === 'string' ? body : body.toString('utf8');
        // Checked here, not as the parser's bodyLimit, which would apply to /v1 bodies too.
        if (text.length > MAX_FORM_BYTES) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(), undefined);
        done(null, Object.fromEntries(new URLSearchParams(text)));
      },
    );
  }
}
