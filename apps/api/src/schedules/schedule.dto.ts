import { MISSED_POLICIES } from '@almanac/domain';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { anyJson } from '../docs/any-json';

const PAYLOAD = "Any JSON value, as a job's payload takes (POST /v1/jobs): each occurrence's job gets it. It must match the kind's payload schema (CreateSchedule.<kind> here).";
const EXAMPLE_PAYLOAD = { url: 'https://reports.example.com/run' };

export class CreateScheduleDto {
  @ApiProperty({ example: 'nightly-report', description: 'Unique per tenant; same rules as job keys.' })
  key!: string;

  @ApiProperty({ example: 'http' })
  kind!: string;

  @ApiProperty({ example: '0 9 * * 1-5', description: '5-field cron, read as wall-clock time in `timezone`.' })
  cron!: string;

  @ApiProperty({ example: 'Europe/Berlin', description: 'IANA time zone.' })
  timezone!: string;

  @ApiPropertyOptional(anyJson(PAYLOAD, EXAMPLE_PAYLOAD))
  payload?: unknown;

  @ApiPropertyOptional({ enum: MISSED_POLICIES, description: 'What to do with occurrences missed while down or paused; default skip.' })
  missed?: string;

  @ApiPropertyOptional({ example: 3, minimum: 1, maximum: 100 })
  maxAttempts?: number;

  @ApiPropertyOptional({
    type: 'integer', nullable: true, example: 300, minimum: 1, maximum: 86400,
    description: 'Each run should start within this many seconds of its due instant; one that does not is reported (almanac_schedule_runs_total{outcome="missed"}, AlmanacScheduleMissed). null: no expectation (the default).',
  })
  expectWithinSeconds?: number | null;
}

/** What an edit of the values the occurrences' jobs get does to those already made. */
const REMADE = 'A change replaces the occurrences not started and not due within 2 minutes; those due sooner, or due and waiting, keep what they were made with.';

export class UpdateScheduleDto {
  @ApiPropertyOptional({ example: 'http', description: REMADE })
  kind?: string;

  @ApiPropertyOptional({ example: '30 8 * * 1-5', description: 'A cron or timezone change bumps `version` and replaces the occurrences not started and not due yet.' })
  cron?: string;

  @ApiPropertyOptional({ example: 'America/New_York' })
  timezone?: string;

  @ApiPropertyOptional(anyJson(`${PAYLOAD} Checked against the new kind when kind changes too, else the schedule's. ${REMADE}`, EXAMPLE_PAYLOAD))
  payload?: unknown;

  @ApiPropertyOptional({ enum: MISSED_POLICIES })
  missed?: string;

  @ApiPropertyOptional({ example: 5, description: REMADE })
  maxAttempts?: number;

  @ApiPropertyOptional({
    type: 'integer', nullable: true, example: 300, minimum: 1, maximum: 86400,
    description: 'Each run should start within this many seconds of its due instant; one that does not is reported (almanac_schedule_runs_total{outcome="missed"}, AlmanacScheduleMissed). null: no expectation (the default).',
  })
  expectWithinSeconds?: number | null;
}

export class LastOutcomeDto {
  @ApiProperty({ enum: ['ok', 'late', 'missed', 'failed'], example: 'ok', description: 'ok: started within expectWithinSeconds; late: after; missed: not started by then; failed: dead' })
  outcome!: string;

  @ApiProperty({ nullable: true, type: String, example: '2026-11-30T08:00:00.000Z', description: 'When that run was due' })
  dueAt!: string | null;
}

export class ScheduleDto {
  @ApiProperty({ example: '42' })
  id!: string;

  @ApiProperty({ example: 'nightly-report' })
  key!: string;

  @ApiProperty({ example: 'http' })
  kind!: string;

  @ApiProperty({ example: '0 9 * * 1-5' })
  cron!: string;

  @ApiProperty({ example: 'Europe/Berlin' })
  timezone!: string;

  @ApiProperty(anyJson('The payload each occurrence gets (any JSON; null when none).', EXAMPLE_PAYLOAD))
  payload!: unknown;

  @ApiProperty({ enum: MISSED_POLICIES, example: 'skip' })
  missed!: string;

  @ApiProperty({ example: 3 })
  maxAttempts!: number;

  @ApiProperty({ type: 'integer', nullable: true, example: 300, description: 'Each run should start within this many seconds of its due instant (null: no expectation)' })
  expectWithinSeconds!: number | null;

  @ApiProperty({ type: LastOutcomeDto, nullable: true, description: 'The latest watched run (schedules with expectWithinSeconds)' })
  lastOutcome!: LastOutcomeDto | null;

  @ApiProperty({ example: false })
  paused!: boolean;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'Why Almanac paused the schedule itself: Postgres refused a value of its occurrences (set aside so every other schedule goes on). Cleared on resume.',
  })
  lastError!: string | null;

  @ApiProperty({ example: 1 })
  version!: number;

  @ApiProperty({ example: '2026-11-30T08:00:00.000Z', nullable: true, type: String })
  nextRunAt!: string | null;

  @ApiProperty({ example: '2026-11-29T10:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ example: '2026-11-29T10:00:00.000Z' })
  updatedAt!: string;

  @ApiPropertyOptional({ example: 2, description: 'In PATCH, DELETE and pause answers: occurrences not yet run that the change removed.' })
  removedOccurrences?: number;
}

export class SchedulePageDto {
  @ApiProperty({ type: [ScheduleDto] })
  items!: ScheduleDto[];

  @ApiProperty({ nullable: true, type: String, example: null })
  nextCursor!: string | null;
}

export class OccurrenceDto {
  @ApiProperty({ example: '2026-11-30T08:00:00.000Z' })
  at!: string;

  @ApiProperty({ example: '2026-11-30T09:00:00+01:00', description: 'The same instant in the schedule\'s zone.' })
  local!: string;
}

export class OccurrencePreviewDto {
  @ApiProperty({ example: 'Europe/Berlin' })
  timezone!: string;

  @ApiProperty({ type: [OccurrenceDto] })
  items!: OccurrenceDto[];
}

export class ScheduleRunDto extends OccurrenceDto {
  @ApiProperty({
    example: 'succeeded',
    enum: ['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled', 'skipped', 'removed', 'upcoming'],
    description: "The job's state; skipped: no job was made for it (the missed-run policy, or a pause); removed: retention removed its job; upcoming: not due yet",
  })
  state!: string;

  @ApiProperty({ nullable: true, type: String, example: '119352210347848' })
  jobId!: string | null;

  @ApiProperty({ example: 1 })
  attempts!: number;

  @ApiProperty({ nullable: true, type: String, example: '2026-11-30T08:00:00.012Z', description: 'When its first attempt started; null while that attempt still runs (recorded when it ends)' })
  startedAt!: string | null;

  @ApiProperty({ nullable: true, type: String, example: '2026-11-30T08:00:00.140Z' })
  finishedAt!: string | null;

  @ApiProperty({ nullable: true, type: Number, example: 12, description: 'How long after its nominal instant its first attempt started (null until that is known)' })
  lateMs!: number | null;

  @ApiProperty(anyJson('What its job returned (any JSON; null when nothing).', { status: 200 }))
  result!: unknown;

  @ApiProperty({ nullable: true, type: String, example: null })
  error!: string | null;

  @ApiProperty({ nullable: true, type: String, example: null, description: 'the code of error (see AttemptDto.errorCode)' })
  errorCode!: string | null;

  @ApiProperty({ nullable: true, type: String, example: null, description: 'Why there is no job (skipped, removed)' })
  reason!: string | null;
}

export class ScheduleRunPageDto {
  @ApiProperty({ example: 'Europe/Berlin' })
  timezone!: string;

  @ApiProperty({ type: [ScheduleRunDto] })
  items!: ScheduleRunDto[];

  @ApiProperty({ nullable: true, type: String, example: null, description: 'Pass back as cursor for the next occurrences of the window' })
  nextCursor!: string | null;
}
