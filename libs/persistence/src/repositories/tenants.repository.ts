import { DEFAULT_SHARE, type KindLimit, type TenantShare } from '@almanac/domain';
import { Injectable } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { type Db, sql } from '../sql';

export interface TenantRecord {
  id: number;
  name: string;
  createdAt: Date;
  /** Per-tenant ingest rate override; null means the configured default. */
  rateLimitPerSecond: number | null;
  /** This tenant's ceiling on schedules; null: the installation's default. */
  maxSchedules: number | null;
  /** Its share of busy pools and its limits (weight 1 and no limits by default). */
  share: TenantShare;
}

export const API_KEY_PREFIX = 'alm_';
/** 32 random bytes in base64url (43 characters) after the prefix. */
const API_KEY_SHAPE = /^alm_[A-Za-z0-9_-]{43}$/;

interface TenantRow {
  id: number;
  name: string;
  created_at: Date;
  rate_limit_per_second: number | null;
  max_schedules: number | null;
  weight: number;
  max_concurrency: number | null;
  kind_limits: Record<string, KindLimit> | null;
}

const COLUMNS = 'id, name, created_at, rate_limit_per_second, max_schedules, weight, max_concurrency, kind_limits';

export function hashApiKey(apiKey: string): Buffer {
  return createHash('sha256').update(apiKey, 'utf8').digest();
}

@Injectable()
export class TenantsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Creates a tenant and its API key. The key is returned once and only its sha256 is kept. */
  async create(
    name: string,
    opts: { rateLimitPerSecond?: number | null; maxSchedules?: number | null } = {},
    db: Db = this.dataSource,
  ): Promise<{ tenant: TenantRecord; apiKey: string }> {
    const apiKey = API_KEY_PREFIX + randomBytes(32).toString('base64url');
    const { rows } = await sql<TenantRow>(
      db,
      `INSERT INTO tenants (name, api_key_hash, rate_limit_per_second, max_schedules) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
      [name, hashApiKey(apiKey), opts.rateLimitPerSecond ?? null, opts.maxSchedules ?? null],
    );
    return { tenant: toTenant(rows[0]), apiKey };
  }

  /** The tenant owning `apiKey`, or null. Malformed keys never reach the database. */
  async findByApiKey(apiKey: string, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!API_KEY_SHAPE.test(apiKey)) return null;
    const { rows } = await sql<TenantRow>(db, `SELECT ${COLUMNS} FROM tenants WHERE api_key_hash = $1`, [hashApiKey(apiKey)]);
    return rows.length ? toTenant(rows[0]) : null;
  }

  /** Changes a tenant's share and limits (fields left undefined stay); null when there is no such tenant. */
  async updateShare(id: number, patch: Partial<TenantShare>, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!Number.isSafeInteger(id) || id < 1 || id > 2147483647) return null;
    const { rows } = await sql<TenantRow>(
      db,
      `UPDATE tenants SET weight = CASE WHEN $2 THEN $3::real ELSE weight END,
                          max_concurrency = CASE WHEN $4 THEN $5::int ELSE max_concurrency END,
                          kind_limits = CASE WHEN $6 THEN $7::jsonb ELSE kind_limits END
        WHERE id = $1 RETURNING ${COLUMNS}`,
      [
        id,
        patch.weight !== undefined, patch.weight ?? DEFAULT_SHARE.weight,
        patch.maxConcurrency !== undefined, patch.maxConcurrency ?? null,
        patch.kindLimits !== undefined, patch.kindLimits === undefined || patch.kindLimits === null ? null : JSON.stringify(patch.kindLimits),
      ],
    );
    return rows.length ? toTenant(rows[0]) : null;
  }

  /**
   * Every tenant whose share differs from the default (weight 1, no limits): what the dispatcher
   * keeps in memory. Read once a second; tenants at the default are not read at all.
   */
  async listShares(db: Db = this.dataSource): Promise<Map<number, TenantShare>> {
    const { rows } = await sql<TenantRow>(
      db,
      `SELECT id, weight, max_concurrency, kind_limits FROM tenants
        WHERE weight <> 1 OR max_concurrency IS NOT NULL OR kind_limits IS NOT NULL`,
    );
    return new Map(rows.map((r) => [r.id, toShare(r)]));
  }

  async findById(id: number, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!Number.isSafeInteger(id) || id < 1 || id > 2147483647) return null;
    const { rows } = await sql<TenantRow>(db, `SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return rows.length ? toTenant(rows[0]) : null;
  }
}

function toTenant(r: TenantRow): TenantRecord {
  return { id: r.id, name: r.name, createdAt: r.created_at, rateLimitPerSecond: r.rate_limit_per_second, maxSchedules: r.max_schedules, share: toShare(r) };
}

function toShare(r: Pick<TenantRow, 'weight' | 'max_concurrency' | 'kind_limits'>): TenantShare {
  return { weight: Number(r.weight), maxConcurrency: r.max_concurrency, kindLimits: r.kind_limits };
}
