import { JOB_STATES } from '@almanac/domain';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { anyJson } from '../docs/any-json';
import { REPLAY_MODES } from './job-input';
import { FieldIssueDto } from '../http/error.dto';

const TIERS = ['immediate', 'hot', 'cold'];

export class CreateJobDto {
  @ApiProperty({ example: 'charge', description: 'A kind a worker has registered (GET /v1/kinds; built in: noop, charge, ledger-transfer, http, and email where SMTP is set).' })
  kind!: string;

  @ApiProperty({
    example: 'invoice:2026-11:customer-42',
    maxLength: 200,
    description: 'Idempotency key, unique per tenant: letters, digits and - _ . : / @ + = ; must not start with "schedule:".',
  })
  key!: string;

  @ApiProperty({ example: '2026-11-30T09:00:00+01:00', description: 'ISO 8601 with a UTC offset or Z.' })
  runAt!: string;

  @ApiPropertyOptional(
    anyJson(
      "Any JSON value (object, array, string, number, boolean or null; absent is null), at most ALMANAC_MAX_PAYLOAD_BYTES (64 KiB) serialised (larger is 413) and nested at most 64 deep. It must match the kind's payload schema (GET /v1/kinds; CreateJob.<kind> here).",
      { url: 'https://billing.example.com/hooks/invoice', body: { customer: 42 } },
    ),
  )
  payload?: unknown;

  // Defaults are said in words, not `default`: generators make a property with a default required.
  @ApiPropertyOptional({ example: 5, minimum: 1, maximum: 100, description: 'Attempts in all; when absent ALMANAC_DEFAULT_MAX_ATTEMPTS (3).' })
  maxAttempts?: number;

  @ApiPropertyOptional({
    enum: REPLAY_MODES,
    example: 'result',
    description:
      'What a key whose job retention removed answers (it stays reserved): `conflict` (when absent) 409 with how and when the job ended; `result` 200 with the same as a RemovedJob, including its result digest, the way an idempotent API replays its first answer.',
  })
  replay?: string;
}

export class CreateJobBatchDto {
  @ApiProperty({ type: [CreateJobDto], maxItems: 1000 })
  jobs!: CreateJobDto[];
}

export class JobDto {
  @ApiProperty({ example: '1234567890123', description: 'Time-ordered id, as a string.' })
  id!: string;

  @ApiProperty({ example: 'http' })
  kind!: string;

  @ApiProperty({ example: 'invoice:2026-11:customer-42' })
  key!: string;

  @ApiProperty({ example: '2026-11-30T08:00:00.000Z' })
  runAt!: string;

  @ApiProperty({ enum: TIERS, example: 'cold', description: 'Where the job lives now, by its due time.' })
  tier!: string;

  @ApiProperty({ enum: JOB_STATES, example: 'scheduled' })
  state!: string;

  @ApiProperty({ example: 0 })
  attempts!: number;

  @ApiProperty({ example: 3 })
  maxAttempts!: number;

  @ApiProperty({ example: '2026-11-29T10:00:00.000Z' })
  createdAt!: string;
}

export class AttemptDto {
  @ApiProperty({ example: 1 })
  attempt!: number;

  @ApiProperty({ example: '2026-11-30T08:00:00.120Z' })
  startedAt!: string;

  @ApiProperty({ example: '2026-11-30T08:00:00.480Z', nullable: true, type: String })
  finishedAt!: string | null;

  @ApiProperty({ example: 'succeeded', nullable: true, type: String })
  outcome!: string | null;

  @ApiProperty({ example: 'HTTP 503', nullable: true, type: String, description: 'a message meant for the tenant; an exception\'s own text is only in the operator\'s logs' })
  error!: string | null;

  @ApiProperty({
    example: 'handler',
    nullable: true,
    type: String,
    description: 'handler (the reason the handler gave), invalid_payload, timeout, handler_error, shutdown, lost, released, set_aside (its claim failed on a value of its row)',
  })
  errorCode!: string | null;

  @ApiProperty(anyJson('What the attempt returned (any JSON; null when it returned nothing or failed).', { status: 200 }))
  result!: unknown;
}

export class JobProgressDto {
  @ApiProperty({ example: 42.5, minimum: 0, maximum: 100 })
  percent!: number;

  @ApiProperty({ example: 'rows 425 of 1000', nullable: true, type: String, maxLength: 200 })
  note!: string | null;

  @ApiProperty({ example: 1, type: 'integer' })
  attempt!: number;

  @ApiProperty({ example: '2026-12-04T12:00:00.000Z', type: String, format: 'date-time' })
  at!: string;
}

export class JobDetailDto extends JobDto {
  @ApiProperty(anyJson('The payload as stored (any JSON; null when none was sent).', { url: 'https://billing.example.com/hooks/invoice' }))
  payload!: unknown;

  @ApiProperty(anyJson("The handler's result (any JSON; null until it succeeded).", { status: 200 }))
  result!: unknown;

  @ApiProperty({
    example: '9f86d081884c7d659a2feaa0c55ad015',
    nullable: true,
    type: String,
    description: "Hex of the first 16 bytes of SHA-256 over the result's stored JSON text; null without a result. A replay of the key after retention removed the job answers it (RemovedJob).",
  })
  resultDigest!: string | null;

  @ApiProperty({ example: null, nullable: true, type: String })
  lastError!: string | null;

  @ApiProperty({ example: null, nullable: true, type: String, description: 'the code of lastError (see AttemptDto.errorCode)' })
  lastErrorCode!: string | null;

  @ApiProperty({ example: null, nullable: true, type: String })
  finishedAt!: string | null;

  @ApiProperty({
    type: JobProgressDto,
    nullable: true,
    description: "What its handler last reported (ctx.progress), written about once a second while it runs; `attempt` says which run reported it. null: nothing reported.",
  })
  progress!: JobProgressDto | null;

  @ApiProperty({ type: [AttemptDto], description: 'The newest 20 attempts, oldest of them first; older ones through GET /v1/jobs/{id}/attempts.' })
  history!: AttemptDto[];

  @ApiProperty({ example: null, nullable: true, type: String, description: 'The cursor of the older attempts (GET /v1/jobs/{id}/attempts?cursor=), null when history holds them all.' })
  historyNext!: string | null;
}

export class RemovedJobDto {
  @ApiProperty({ example: true, description: 'Always true: the job was removed by retention; its key stays reserved.' })
  removed!: boolean;

  @ApiProperty({ example: 'invoice:2026-11:customer-42' })
  key!: string;

  @ApiProperty({ enum: ['succeeded', 'dead', 'cancelled'], example: 'succeeded', description: 'How the job ended.' })
  state!: string;

  @ApiProperty({ example: '2027-01-02', format: 'date', description: 'The UTC day retention removed it.' })
  removedOn!: string;

  @ApiProperty({ example: '2028-02-06', format: 'date', nullable: true, type: String, description: 'The last UTC day the key stays reserved; null: for good.' })
  reservedThrough!: string | null;

  @ApiProperty({ example: '9f86d081884c7d659a2feaa0c55ad015', nullable: true, type: String, description: "The job's resultDigest as it was (JobDetail.resultDigest); null: no result." })
  resultDigest!: string | null;
}

export class AttemptPageDto {
  @ApiProperty({ type: [AttemptDto], description: 'Newest first.' })
  items!: AttemptDto[];

  @ApiProperty({ example: '21', nullable: true, type: String })
  nextCursor!: string | null;
}

export class BatchItemErrorDto {
  @ApiProperty({ example: 400 })
  statusCode!: number;

  @ApiProperty({ example: 'kind "nope" has no handler (known: noop, http, charge)' })
  message!: string;

  @ApiProperty({ type: [FieldIssueDto] })
  details!: FieldIssueDto[];
}

export class BatchItemDto {
  @ApiProperty({ example: 0 })
  index!: number;

  @ApiProperty({ enum: ['created', 'existing', 'removed', 'error'], example: 'created', description: '`removed`: the key named a job retention removed, and the item asked `"replay": "result"`.' })
  status!: string;

  @ApiPropertyOptional({ type: JobDto })
  job?: JobDto;

  @ApiPropertyOptional({ type: RemovedJobDto })
  removed?: RemovedJobDto;

  @ApiPropertyOptional({ type: BatchItemErrorDto })
  error?: BatchItemErrorDto;
}

export class BatchResultDto {
  @ApiProperty({ type: [BatchItemDto], description: 'One per submitted job, in order.' })
  results!: BatchItemDto[];

  @ApiProperty({ example: 998 })
  created!: number;

  @ApiProperty({ example: 1 })
  existing!: number;

  @ApiProperty({ example: 0, description: 'Items answered `removed` (`"replay": "result"` on a key whose job retention removed).' })
  removed!: number;

  @ApiProperty({ example: 1 })
  errors!: number;
}

export class JobPageDto {
  @ApiProperty({ type: [JobDto] })
  items!: JobDto[];

  @ApiProperty({ example: 'WyIyMDI2LTExLTMwVDA4OjAwOjAwLjAwMDAwMFoiLCIxMjM0Il0', nullable: true, type: String, description: 'The next page\'s `cursor`; null only at the end of the list (a page may be short, or empty, before it)' })
  nextCursor!: string | null;
}

export class RescheduleJobDto {
  @ApiProperty({ example: '2026-12-24T18:00:00Z' })
  runAt!: string;
}

export class RetryJobDto {
  @ApiPropertyOptional({ example: '2026-11-30T09:30:00Z', description: 'When to run again; default now.' })
  runAt?: string;

  @ApiPropertyOptional({
    example: 1,
    minimum: 1,
    maximum: 100,
    description: 'Attempts granted on top of those used (maxAttempts becomes attempts + extraAttempts); default 1.',
  })
  extraAttempts?: number;
}
