import type { Kind, KindList, Operation } from './api-types';
import { idPath } from './errors';
import { JobsApi } from './jobs-api';
import type { BuiltInKindPayloads } from './kind-payloads';
import { SchedulesApi } from './schedules-api';
import { type CallOptions, type ClientOptions, Transport } from './transport';

export interface TenantClientOptions extends ClientOptions {
  /** The tenant's API key (`alm_…`). */
  apiKey: string;
}

/** A tenant's view of the API. `P` maps each kind to its payload type (see BuiltInKindPayloads). */
export class AlmanacClient<P extends object = BuiltInKindPayloads> {
  readonly jobs: JobsApi<P>;
  readonly schedules: SchedulesApi<P>;
  readonly operations: { get(id: string, options?: CallOptions): Promise<Operation>; cancel(id: string, options?: CallOptions): Promise<Operation> };
  readonly kinds: { list(options?: CallOptions): Promise<Kind[]> };

  constructor(options: TenantClientOptions) {
    const http = new Transport(options, options.apiKey);
    this.jobs = new JobsApi<P>(http);
    this.schedules = new SchedulesApi<P>(http);
    this.operations = {
      /** A bulk operation's state and counts. */
      get: async (id, opts) =>
        (await http.request<Operation>({ method: 'GET', path: idPath('operations', 'operation', id), idempotent: true, ...opts })).body,
      /** Stops a bulk operation: its chunks not yet applied never are. Safe to retry (a resend answers it cancelled). */
      cancel: async (id, opts) =>
        (await http.request<Operation>({ method: 'POST', path: `${idPath('operations', 'operation', id)}/cancel`, idempotent: true, ...opts })).body,
    };
    this.kinds = {
      /** The kinds workers have registered, with their payload schemas. */
      list: async (opts) => (await http.request<KindList>({ method: 'GET', path: '/v1/kinds', idempotent: true, ...opts })).body.items,
    };
  }
}

/**
 * A client for one tenant: `createClient({ baseUrl: 'http://localhost:3000', apiKey })`.
 * Payloads are typed per kind for the built-in kinds; add yours with the type parameter.
 */
export function createClient<P extends object = BuiltInKindPayloads>(options: TenantClientOptions): AlmanacClient<P> {
  return new AlmanacClient<P>(options);
}
