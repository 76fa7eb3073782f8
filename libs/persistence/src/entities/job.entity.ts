import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Typed reads of jobs for admin and tooling. `state` is the one-byte code (decode with
 * `decodeState`); hot paths (ingest, promotion, transitions) use JobsRepository's SQL.
 */
@Entity({ name: 'jobs' })
export class JobEntity {
  /** bigint; TypeORM hands it over as a string, as the API does. */
  @PrimaryColumn({ type: 'bigint' })
  id!: string;

  @Column({ name: 'run_at', type: 'timestamptz' })
  runAt!: Date;

  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @Column({ name: 'tenant_id', type: 'integer' })
  tenantId!: number;

  @Column({ type: 'smallint' })
  attempts!: number;

  @Column({ name: 'max_attempts', type: 'smallint' })
  maxAttempts!: number;

  /** Postgres `"char"`: s q r d x c (job-state.codec.ts). */
  @Column({ type: 'char', length: 1 })
  state!: string;

  @Column({ type: 'text' })
  kind!: string;

  @Column({ type: 'text', collation: 'C' })
  key!: string;

  /** `json` (text kept as sent), not jsonb: see the core migration. */
  @Column({ type: 'json', nullable: true })
  payload!: unknown;

  @Column({ type: 'jsonb', nullable: true })
  result!: unknown;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;
}
