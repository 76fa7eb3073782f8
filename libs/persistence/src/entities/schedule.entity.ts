import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A recurring schedule (cron + time zone) whose occurrences the recurring sweep materialises. */
@Entity({ name: 'schedules' })
export class ScheduleEntity {
  @PrimaryColumn({ type: 'bigint' })
  id!: string;

  @Column({ name: 'next_run_at', type: 'timestamptz', nullable: true })
  nextRunAt!: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  @Column({ name: 'tenant_id', type: 'integer' })
  tenantId!: number;

  @Column({ type: 'integer' })
  version!: number;

  @Column({ name: 'max_attempts', type: 'smallint' })
  maxAttempts!: number;

  @Column({ type: 'boolean' })
  paused!: boolean;

  @Column({ type: 'text' })
  missed!: string;

  @Column({ type: 'text' })
  kind!: string;

  @Column({ type: 'text', collation: 'C' })
  key!: string;

  @Column({ type: 'text' })
  cron!: string;

  @Column({ type: 'text' })
  timezone!: string;

  @Column({ type: 'jsonb', nullable: true })
  payload!: unknown;
}
