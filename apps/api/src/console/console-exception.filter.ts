import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { ASSET_URLS } from './console-assets';
import { describeFailure, sendHtml } from './console-http';
import { html } from './views/html';
import { page } from './views/layout';

/**
 * Whatever escapes a console handler (a refusal thrown before its page could be drawn, the
 * request deadline's 503, a defect) is answered as a page, never as the API's JSON or a stack:
 * the status and headers (Retry-After) of the refusal, or a logged 500.
 */
@Catch()
export class ConsoleExceptionFilter implements ExceptionFilter {
  @InjectPinoLogger('console') private readonly log!: PinoLogger;

  catch(exception: unknown, host: ArgumentsHost): void {
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const failure =
      describeFailure(exception) ??
      (exception instanceof HttpException ? { status: exception.getStatus(), message: exception.message, headers: {} } : null);
    if (!failure) this.log.error({ err: exception }, 'console: unhandled error');
    const { status, message, headers } = failure ?? { status: 500, message: 'Something went wrong on our side; it has been logged.', headers: {} };
    const content = html`<p><a href="/console">Back to the console</a></p>`;
    sendHtml(reply, status, page({ title: status === 404 ? 'Not found' : 'Error', viewer: null, error: message, assets: ASSET_URLS }, content), headers);
  }
}
