import { chargeHandler } from './charge.handler';
import type { HandlerDefinition } from '@almanac/kinds';
import { emailHandler, type EmailHandlerOptions } from './email.handler';
import { httpHandler, HttpHandlerOptions } from './http.handler';
import { ledgerTransferHandler } from './ledger-transfer.handler';
import { noopHandler } from './noop.handler';

export * from './charge.handler';
export * from './email.handler';
export * from './http.handler';
export * from './ledger-transfer.handler';
export * from './noop.handler';

export interface HandlerSettings {
  http: HttpHandlerOptions;
  /** Unset (no ALMANAC_SMTP_URL): this worker does not run, or register, `email`. */
  email?: EmailHandlerOptions;
}

/** Kinds that need no settings. `npm run new:kind` adds new ones to this list. */
const HANDLERS: HandlerDefinition[] = [noopHandler, chargeHandler, ledgerTransferHandler];

/**
 * Every kind this worker build runs; a new handler is added here once. Only the worker imports
 * handler code: it registers the kinds it serves (and their pools) at boot.
 */
export function allHandlers(settings: HandlerSettings): HandlerDefinition[] {
  return [...HANDLERS, httpHandler(settings.http), ...(settings.email ? [emailHandler(settings.email)] : [])];
}
