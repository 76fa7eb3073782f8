import { chargeHandler } from './charge.handler';
import type { HandlerDefinition } from './handler';
import { httpHandler, HttpHandlerOptions } from './http.handler';
import { noopHandler } from './noop.handler';

export * from './charge.handler';
export * from './handler';
export * from './http.handler';
export * from './noop.handler';
export * from './registry';

export interface HandlerSettings {
  http: HttpHandlerOptions;
}

/**
 * Every kind this build knows. Both the dispatcher (pool and lease per kind) and the worker
 * read this list, so a new handler is added here once.
 */
export function allHandlers(settings: HandlerSettings): HandlerDefinition[] {
  return [noopHandler, httpHandler(settings.http), chargeHandler];
}
