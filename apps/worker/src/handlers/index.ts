import { chargeHandler } from './charge.handler';
import type { HandlerDefinition } from '@almanac/delivery';
import { httpHandler, HttpHandlerOptions } from './http.handler';
import { noopHandler } from './noop.handler';

export * from './charge.handler';
export * from './http.handler';
export * from './noop.handler';

export interface HandlerSettings {
  http: HttpHandlerOptions;
}

/**
 * Every kind this worker build runs; a new handler is added here once. Only the worker imports
 * handler code: it registers the kinds it serves (and their pools) for the dispatcher.
 */
export function allHandlers(settings: HandlerSettings): HandlerDefinition[] {
  return [noopHandler, httpHandler(settings.http), chargeHandler];
}
