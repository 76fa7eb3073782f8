import { BULK_ACTIONS, BULK_JOB_STATES, BULK_STATES } from '@almanac/domain';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class BulkFilterDto {
  @ApiPropertyOptional({ example: 'http' })
  kind?: string;

  @ApiPropertyOptional({ example: 'campaign:2026-12:', description: 'Keys that start with this.' })
  keyPrefix?: string;

  @ApiPropertyOptional({ example: '2026-12-01T00:00:00Z', description: 'runAt >= runAtFrom' })
  runAtFrom?: string;

  @ApiPropertyOptional({ example: '2026-12-08T00:00:00Z', description: 'runAt < runAtTo' })
  runAtTo?: string;

  @ApiPropertyOptional({ enum: BULK_JOB_STATES, description: 'Both when absent: only jobs that have not started change.' })
  state?: string;
}

export class BulkCancelDto {
  @ApiPropertyOptional({
    example: 'campaign-2026-12-cancel',
    description: 'Makes the request safe to resend (unique per tenant, as a job key): the same request again answers the operation it made (200); another request under the key is a 409. Kept as long as the operation.',
  })
  key?: string;

  @ApiProperty({ type: BulkFilterDto, description: 'At least one field.' })
  filter!: BulkFilterDto;
}

export class BulkRescheduleDto {
  @ApiPropertyOptional({
    example: 'campaign-2026-12-cancel',
    description: 'Makes the request safe to resend (unique per tenant, as a job key): the same request again answers the operation it made (200); another request under the key is a 409. Kept as long as the operation.',
  })
  key?: string;

  @ApiProperty({ type: BulkFilterDto, description: 'At least one field.' })
  filter!: BulkFilterDto;

  @ApiPropertyOptional({ example: '2026-12-24T09:00:00Z', description: 'Every matched job to this instant (or shiftBySeconds).' })
  runAt?: string;

  @ApiPropertyOptional({ example: 3600, description: 'Move each matched job by this many seconds, negative for earlier (or runAt).' })
  shiftBySeconds?: number;
}

export class OperationDto {
  @ApiProperty({ example: '42' })
  id!: string;

  @ApiPropertyOptional({ example: 'campaign-2026-12-cancel', description: "The request's key, when it gave one." })
  key?: string;

  @ApiProperty({ enum: BULK_ACTIONS })
  action!: string;

  @ApiProperty({ enum: BULK_STATES, description: 'pending: not matched yet; running: chunks left; done; failed (see error); cancelled (POST /v1/operations/:id/cancel).' })
  state!: string;

  @ApiProperty({ type: BulkFilterDto })
  filter!: BulkFilterDto;

  @ApiPropertyOptional({ example: '2026-12-24T09:00:00.000Z' })
  runAt?: string;

  @ApiPropertyOptional({ example: 3600 })
  shiftBySeconds?: number;

  @ApiProperty({ type: Number, nullable: true, example: 500000, description: 'Jobs the filter matched as the operation started.' })
  matched!: number | null;

  @ApiProperty({ example: 120000, description: 'Matched jobs looked at so far: changed + skipped.' })
  processed!: number;

  @ApiProperty({ example: 119990 })
  changed!: number;

  @ApiProperty({ example: 10, description: 'Matched jobs that had started or finished by their turn.' })
  skipped!: number;

  @ApiProperty({ example: '2026-12-02T10:00:00.000Z' })
  createdAt!: string;

  @ApiProperty({ type: String, nullable: true })
  startedAt!: string | null;

  @ApiProperty({ type: String, nullable: true })
  finishedAt!: string | null;

  @ApiProperty({ type: String, nullable: true })
  error!: string | null;
}
