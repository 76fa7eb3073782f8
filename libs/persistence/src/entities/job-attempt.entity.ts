import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One execution attempt of a job; written by the execution and sweeps repositories (batched SQL), read by AttemptsRepository. */
@Entity({ name: 'job_attempts' })
export class JobAttemptEntity {
  @PrimaryColumn({ name: 'job_id', type: 'bigint' })
  jobId!: string;

  @PrimaryColumn({ type: 'smallint' })
  attempt!: number;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt!: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @Column({ name: 'tenant_id', type: 'integer' })
  tenantId!: number;

  @Column({ type: 'text', nullable: true })
  outcome!: string | null;

  @Column({ name: 'worker_id', type: 'text', nullable: true })
  workerId!: string | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ type: 'jsonb', nullable: true })
  result!: unknown;
}
