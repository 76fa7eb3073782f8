import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { onConnection, sql } from '../sql';
import { LIST_KINDS_SQL } from '../statements/list-kinds.sql';
import { FORGET_KIND_DEFINITIONS_SQL, READ_KIND_STANDING_SQL, REGISTER_KINDS_SQL } from '../statements/register-kinds.sql';

/** A kind as a worker registers it: what runs it, for how long at most, and what payload it takes. */
export interface KindRegistration {
  kind: string;
  pool: string;
  timeoutMs: number;
  /** JSON Schema; null when the kind takes any payload. */
  payloadSchema: Record<string, unknown> | null;
}

export interface RegisteredKind extends KindRegistration {
  registeredBy: string;
  registeredAt: Date;
}

/** What a worker's assertion of its kinds changed or found, for its log. */
export interface KindAssertionResult {
  /** Kinds this assertion moved to another pool, with the pool they had. */
  moved: { kind: string; previousPool: string }[];
  /** Kinds whose chosen definition is another live one, not this worker's, with the pool it names. */
  superseded: { kind: string; pool: string }[];
}

/** A reading of one kind's registry entry against a worker's own definition (KindsRepository.standing). */
export interface KindStanding {
  /** When it was read, by the database's clock. */
  readAt: Date;
  /** The pool of the definition in use, when it is another than the worker's. */
  supersededBy?: string;
}

/** How often a worker asserts its kinds' definitions (REGISTER_KINDS_SQL). */
export const KIND_ASSERT_EVERY_MS = 30_000;
/** A definition stays live this long after it was last asserted: three assertions missed. */
const KIND_LIVE_FOR_MS = 3 * KIND_ASSERT_EVERY_MS;

/**
 * The kind registry (table job_kinds): the newest live definition of each kind, as workers
 * assert them (REGISTER_KINDS_SQL); read by the API and the dispatcher.
 */
@Injectable()
export class KindsRepository {
  constructor(private readonly db: DataSource) {}

  /** Asserts every kind's definition at once. */
  async register(kinds: readonly KindRegistration[], workerId: string): Promise<KindAssertionResult> {
    if (kinds.length === 0) return { moved: [], superseded: [] };
    kinds = [...kinds].sort((a, b) => a.kind.localeCompare(b.kind));
    const { rows } = await sql<{ kind: string; pool: string; previous_pool: string | null; superseded: boolean }>(this.db, REGISTER_KINDS_SQL, [
      kinds.map((k) => k.kind),
      kinds.map((k) => k.pool),
      kinds.map((k) => k.timeoutMs),
      kinds.map((k) => (k.payloadSchema === null ? null : JSON.stringify(k.payloadSchema))),
      workerId,
      KIND_LIVE_FOR_MS,
    ]);
    await sql(this.db, FORGET_KIND_DEFINITIONS_SQL, [kinds.map((k) => k.kind)]);
    return {
      moved: rows.flatMap((r) => (r.previous_pool === null ? [] : [{ kind: r.kind, previousPool: r.previous_pool }])),
      superseded: rows.flatMap((r) => (r.superseded ? [{ kind: r.kind, pool: r.pool }] : [])),
    };
  }

  /**
   * Whether another definition of `own`'s kind is in use, without asserting (READ_KIND_STANDING_SQL);
   * rejects after `waitMs`, its connection then closed.
   */
  async standing(own: KindRegistration, waitMs: number): Promise<KindStanding> {
    const { rows } = await onConnection(this.db, AbortSignal.timeout(waitMs), (c) => sql<{ read_at: Date; pool: string | null; superseded: boolean }>(c.manager, READ_KIND_STANDING_SQL, [
      own.kind, own.pool, own.timeoutMs, own.payloadSchema === null ? null : JSON.stringify(own.payloadSchema),
    ]));
    return { readAt: rows[0].read_at, ...(rows[0].superseded && rows[0].pool !== null ? { supersededBy: rows[0].pool } : {}) };
  }

  async list(): Promise<RegisteredKind[]> {
    const { rows } = await sql<{
      kind: string;
      pool: string;
      timeout_ms: number;
      payload_schema: Record<string, unknown> | null;
      registered_by: string;
      registered_at: Date;
    }>(this.db, LIST_KINDS_SQL);
    return rows.map((r) => ({
      kind: r.kind,
      pool: r.pool,
      timeoutMs: r.timeout_ms,
      payloadSchema: r.payload_schema,
      registeredBy: r.registered_by,
      registeredAt: r.registered_at,
    }));
  }
}
