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
}

const COLUMNS = 'id, name, created_at, rate_limit_per_second, max_schedules';

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

  async findById(id: number, db: Db = this.dataSource): Promise<TenantRecord | null> {
    if (!Number.isSafeInteger(id) || id < 1 || id > 2147483647) return null;
    const { rows } = await sql<TenantRow>(db, `SELECT ${COLUMNS} FROM tenants WHERE id = $1`, [id]);
    return rows.length ? toTenant(rows[0]) : null;
  }
}

function toTenant(r: TenantRow): TenantRecord {
  return { id: r.id, name: r.name, createdAt: r.created_at, rateLimitPerSecond: r.rate_limit_per_second, maxSchedules: r.max_schedules };
}
