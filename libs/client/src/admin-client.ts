import type {
  ApiKey,
  ApiKeyList,
  CreatedApiKey,
  CreatedSigningSecret,
  CreatedTenant,
  CreateTenant,
  RotateSigningSecret,
  SigningSecret,
  SigningSecretList,
  Tenant,
  TenantList,
  TenantListQuery,
  TenantSummary,
  UpdateTenant,
} from './api-types';
import { eachItem } from './pages';
import { type CallOptions, type ClientOptions, Transport } from './transport';

export interface AdminClientOptions extends ClientOptions {
  /** ALMANAC_ADMIN_TOKEN. */
  adminToken: string;
}

const tenantPath = (id: number) => `/v1/admin/tenants/${id}`;

/** The operator's routes (/v1/admin): tenants, their API keys and their signing secrets. */
export class AdminClient {
  private readonly http: Transport;

  constructor(options: AdminClientOptions) {
    this.http = new Transport(options, options.adminToken);
  }

  readonly tenants = {
    /** A page of tenants in id order; pass `nextCursor` back as `cursor`. */
    list: async (query: TenantListQuery = {}, options?: CallOptions): Promise<TenantList> =>
      (await this.http.request<TenantList>({ method: 'GET', path: '/v1/admin/tenants', query, idempotent: true, ...options })).body,

    /** Every tenant, page by page. */
    iterate: (query: Omit<TenantListQuery, 'cursor'> = {}, options?: CallOptions): AsyncGenerator<TenantSummary, void, undefined> =>
      eachItem(async (cursor) => {
        const page = await this.tenants.list({ ...query, cursor }, options);
        return { items: page.items, next: page.nextCursor };
      }),

    /** A new tenant and its first API key, shown this once. Not retried after a 503: it could make two. */
    create: async (tenant: CreateTenant, options?: CallOptions): Promise<CreatedTenant> =>
      (await this.http.request<CreatedTenant>({ method: 'POST', path: '/v1/admin/tenants', body: tenant, idempotent: false, ...options })).body,

    /** One tenant: its settings, its http allow-list, and what it stores against its quota (`storage`). */
    get: async (id: number, options?: CallOptions): Promise<Tenant> =>
      (await this.http.request<Tenant>({ method: 'GET', path: tenantPath(id), idempotent: true, ...options })).body,

    /** Weight, limits, retention, stored-bytes quota, http allow-list, or suspension (`disabled`). */
    update: async (id: number, change: UpdateTenant, options?: CallOptions): Promise<Tenant> =>
      (await this.http.request<Tenant>({ method: 'PATCH', path: tenantPath(id), body: change, idempotent: true, ...options })).body,
  };

  readonly keys = {
    /** Another API key for the tenant, shown this once. */
    create: async (tenantId: number, options?: CallOptions): Promise<CreatedApiKey> =>
      (await this.http.request<CreatedApiKey>({ method: 'POST', path: `${tenantPath(tenantId)}/keys`, idempotent: false, ...options })).body,

    /** A page of the tenant's keys in id order: prefixes and times, never the keys. */
    page: async (tenantId: number, query: { cursor?: string; limit?: number } = {}, options?: CallOptions): Promise<ApiKeyList> =>
      (await this.http.request<ApiKeyList>({ method: 'GET', path: `${tenantPath(tenantId)}/keys`, query, idempotent: true, ...options })).body,

    /** Every key of the tenant, page by page. */
    list: async (tenantId: number, options?: CallOptions): Promise<ApiKey[]> => {
      const all: ApiKey[] = [];
      for await (const key of eachItem(async (cursor) => {
        const page = await this.keys.page(tenantId, { cursor }, options);
        return { items: page.items, next: page.nextCursor };
      })) all.push(key);
      return all;
    },

    /** Revokes a key: 401 on every API replica within a second. */
    revoke: async (tenantId: number, keyId: number, options?: CallOptions): Promise<void> => {
      await this.http.request<undefined>({ method: 'DELETE', path: `${tenantPath(tenantId)}/keys/${keyId}`, idempotent: true, ...options });
    },
  };

  readonly signingSecrets = {
    /** A new signing secret, shown this once; the old one stays valid for `overlapSeconds` (default a day). */
    rotate: async (tenantId: number, change: RotateSigningSecret = {}, options?: CallOptions): Promise<CreatedSigningSecret> =>
      (await this.http.request<CreatedSigningSecret>({ method: 'POST', path: `${tenantPath(tenantId)}/signing-secrets`, body: change, idempotent: false, ...options })).body,

    /** The tenant's signing secrets, newest first: ids and times, never the secrets. */
    list: async (tenantId: number, options?: CallOptions): Promise<SigningSecret[]> =>
      (await this.http.request<SigningSecretList>({ method: 'GET', path: `${tenantPath(tenantId)}/signing-secrets`, idempotent: true, ...options })).body.items,
  };
}

/** A client for the admin routes: `createAdminClient({ baseUrl, adminToken })`. */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  return new AdminClient(options);
}
