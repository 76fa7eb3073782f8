import type { TenantRecord } from '@almanac/persistence';
import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Patch, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiExtraModels, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentTenant, TenantAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ApiTenantRateLimit, ErrorDto } from '../http/error.dto';
import { isPlainObject } from '../http/validation';
import { Deadline, LongPoll, RequestOver } from '../http/request-deadline.interceptor';
import { IngestRoute } from '../rate-limit/request-rate-limiter';
import { inIngestSpan } from './ingest-span';
import { IngestService } from './ingest.service';
import { JobChangesService } from './job-changes.service';
import { MAX_WAIT_SECONDS, WAITS_PER_REPLICA, WAITS_PER_TENANT } from './job-waits';
import { JobQueriesService } from './job-queries.service';
import {
  AttemptPageDto,
  BatchResultDto,
  CreateJobBatchDto,
  CreateJobDto,
  JobDetailDto,
  JobDto,
  JobPageDto,
  RemovedJobDto,
  RescheduleJobDto,
  RetryJobDto,
} from './job.dto';

const ID = { name: 'id', example: '1234567890123', description: 'Job id (another tenant\'s id answers 404).' };

@ApiTags('jobs')
@ApiBearerAuth('tenant')
@ApiResponse({ status: 401, type: ErrorDto, description: 'Missing or unknown API key' })
@ApiTenantRateLimit()
@Controller('v1/jobs')
@UseGuards(TenantAuthGuard)
export class JobsController {
  constructor(
    private readonly ingest: IngestService,
    private readonly queries: JobQueriesService,
    private readonly changes: JobChangesService,
  ) {}

  @Post()
  @IngestRoute()
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Create a job (idempotent by key)', description: 'The row is committed before the answer.' })
  @ApiBody({ type: CreateJobDto })
  @ApiResponse({ status: 201, type: JobDto, description: 'Created' })
  @ApiExtraModels(RemovedJobDto)
  @ApiResponse({
    status: 200,
    schema: { oneOf: [{ $ref: getSchemaPath(JobDto) }, { $ref: getSchemaPath(RemovedJobDto) }] },
    description: 'The same request was made before: the existing job; or, with `"replay": "result"`, what the key of a job retention removed keeps (RemovedJob)',
  })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({
    status: 409,
    type: ErrorDto,
    description: 'The key names a job with a different kind, runAt or payload (rule `conflict`; runAt only until the job\'s first attempt, and against its current one: a job moved before it ran by PATCH or bulk-reschedule answers its original body 409 too), or a job retention removed: the key stays reserved (rule `retired`; the message says when and how the job ended; `"replay": "result"` answers 200 instead)',
  })
  @ApiResponse({ status: 413, type: ErrorDto, description: 'A payload over ALMANAC_MAX_PAYLOAD_BYTES, or the tenant\'s stored bytes would pass its quota (`details[0].rule = "stored_bytes_quota"`: not the payload\'s fault; room comes back as retention removes jobs)' })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Over the tenant\'s ingest rate (`details[0].rule = "rate_limit"`), one per job, spent before the job is validated; see Retry-After' })
  @ApiResponse({ status: 503, type: ErrorDto, description: 'Too many jobs of this replica (or of this tenant, half of them) wait for their group commit, or the request was not answered in time; see Retry-After. Resending with the same key is safe: a job committed meanwhile answers 200' })
  async create(
    @CurrentTenant() tenant: TenantRecord,
    @Body() body: unknown,
    @Headers() headers: Record<string, string | undefined>,
    @Res({ passthrough: true }) res: FastifyReply,
    @Deadline() deadline: AbortSignal | undefined,
  ): Promise<JobDto | RemovedJobDto> {
    const kind = isPlainObject(body) && typeof body.kind === 'string' ? body.kind : undefined;
    const answer = await inIngestSpan(
      headers,
      { 'messaging.destination.name': kind, 'almanac.tenant': tenant.id },
      (traceParent) => this.ingest.createOne(tenant, body, traceParent, deadline),
      (r) => ('job' in r ? { 'messaging.message.id': r.job.id, 'almanac.job.id': r.job.id, 'almanac.job.key': r.job.key } : { 'almanac.job.key': r.removed.key }),
    );
    if ('removed' in answer) {
      res.status(200);
      return answer.removed;
    }
    res.status(answer.created ? 201 : 200);
    return answer.job;
  }

  @Post('batch')
  @IngestRoute()
  @ApiJsonBodyErrors()
  @HttpCode(200)
  @ApiOperation({ summary: 'Create up to 1000 jobs; one result per item, in order' })
  @ApiBody({ type: CreateJobBatchDto })
  @ApiResponse({ status: 200, type: BatchResultDto })
  @ApiResponse({ status: 400, type: ErrorDto, description: 'Not a {jobs: [...]} body, or more than 1000 jobs' })
  @ApiResponse({ status: 413, type: ErrorDto, description: 'The batch\'s new jobs would take the tenant\'s stored bytes past its quota (`details[0].rule = "stored_bytes_quota"`); none of it is created' })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Over the tenant\'s ingest rate (`details[0].rule = "rate_limit"`), one per item sent, valid or not; see Retry-After' })
  @ApiResponse({ status: 503, type: ErrorDto, description: 'This replica commits ALMANAC_INGEST_BATCHES_IN_FLIGHT batches at once (`details[0].rule = "concurrent_batches"`), at most all but one of them one tenant\'s (`details[0].rule = "tenant_concurrent_batches"`), or the request was not answered in time; see Retry-After' })
  createBatch(
    @CurrentTenant() tenant: TenantRecord,
    @Body() body: unknown,
    @Headers() headers: Record<string, string | undefined>,
    @Deadline() deadline: AbortSignal | undefined,
  ) {
    const count = isPlainObject(body) && Array.isArray(body.jobs) ? body.jobs.length : 0;
    return inIngestSpan(
      headers,
      { 'messaging.batch.message_count': count, 'almanac.tenant': tenant.id },
      (traceParent) => this.ingest.createBatch(tenant, body, traceParent, deadline),
    );
  }

  @Get()
  @ApiOperation({
    summary: 'Find the job for a key, or list jobs',
    description:
      'With `key`: the one job for that key (with attempts). Otherwise a page ordered by (runAt, id); pass `nextCursor` back as `cursor`. A page may be short, or empty, before the end (a call reads a bounded number of rows): only `nextCursor: null` ends the list.',
  })
  @ApiQuery({ name: 'key', required: false, example: 'invoice:2026-11:customer-42' })
  @ApiQuery({ name: 'state', required: false, enum: ['scheduled', 'queued', 'running', 'succeeded', 'dead', 'cancelled'] })
  @ApiQuery({ name: 'kind', required: false, example: 'http' })
  @ApiQuery({ name: 'from', required: false, type: String, format: 'date-time', example: '2026-11-01T00:00:00Z', description: 'runAt >= from' })
  @ApiQuery({ name: 'to', required: false, type: String, format: 'date-time', example: '2026-12-01T00:00:00Z', description: 'runAt < to' })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', example: 100, description: '1..1000, default 100' })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiExtraModels(JobPageDto, JobDetailDto)
  @ApiResponse({
    status: 200,
    schema: { oneOf: [{ $ref: getSchemaPath(JobPageDto) }, { $ref: getSchemaPath(JobDetailDto) }] },
    description: 'A page (JobPage); with `key`, the one job for that key (JobDetail)',
  })
  @ApiResponse({ status: 400, type: ErrorDto, description: 'A malformed key, filter, limit or cursor, or a query parameter this route does not take (rule `unknown_field`)' })
  @ApiResponse({ status: 404, type: ErrorDto, description: 'No job with that key' })
  search(@CurrentTenant() tenant: TenantRecord, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.queries.search(tenant, query, over);
  }

  @Get(':id')
  @LongPoll()
  @ApiOperation({ summary: 'A job with its attempts; with waitSeconds, once it has ended (succeeded, dead, cancelled) or that time ran out' })
  @ApiParam(ID)
  @ApiQuery({ name: 'waitSeconds', required: false, type: 'integer', description: `0..${MAX_WAIT_SECONDS}: hold the answer until the job ends, at most this long (at most ${WAITS_PER_TENANT} waits of a tenant at once per replica: 429 past them)` })
  @ApiResponse({ status: 200, type: JobDetailDto })
  @ApiResponse({ status: 400, type: ErrorDto, description: 'waitSeconds not an integer in range, or a query parameter this route does not take (rule `unknown_field`)' })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Over the tenant\'s request rate, or its waits at once on this replica; see Retry-After' })
  @ApiResponse({ status: 503, type: ErrorDto, description: `This replica holds its ${WAITS_PER_REPLICA} waits at once (\`details[0].rule = "concurrent_waits"\`); see Retry-After` })
  get(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.queries.get(tenant, id, query, over);
  }

  @Get(':id/attempts')
  @ApiOperation({ summary: "A page of a job's attempts, newest first" })
  @ApiParam(ID)
  @ApiQuery({ name: 'limit', required: false, type: 'integer', description: 'at most this many (default 20, at most 1000)' })
  @ApiQuery({ name: 'cursor', required: false, type: String, description: 'historyNext of the job, or nextCursor of the page before' })
  @ApiResponse({ status: 200, type: AttemptPageDto })
  @ApiResponse({ status: 400, type: ErrorDto, description: 'A limit or cursor out of range, or a query parameter this route does not take (rule `unknown_field`)' })
  @ApiResponse({ status: 404, type: ErrorDto })
  attempts(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.queries.attemptPage(tenant, id, query, over);
  }

  @Delete(':id')
  @ApiOperation({
    summary: 'Cancel a job that has not started',
    description: 'The row is cancelled at once and will not run; a queued job\'s hint stays in the hot queue until a dispatcher claims it, and is dropped then.',
  })
  @ApiParam(ID)
  @ApiResponse({ status: 200, type: JobDto, description: 'Cancelled (or already cancelled)' })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: 'Running or finished' })
  cancel(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.changes.cancel(tenant, id);
  }

  @Patch(':id')
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Reschedule a job (re-tiered: it enters or leaves the hot queue)' })
  @ApiParam(ID)
  @ApiBody({ type: RescheduleJobDto })
  @ApiResponse({ status: 200, type: JobDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: 'Running or finished' })
  reschedule(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Body() body: unknown) {
    return this.changes.reschedule(tenant, id, body);
  }

  @Post(':id/retry')
  @ApiJsonBodyErrors()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Run a dead job again',
    description: 'Attempts keep counting (history is kept); maxAttempts becomes attempts + extraAttempts. 409 `attempt_limit` past 10,000 attempts in the job\'s life.',
  })
  @ApiParam(ID)
  @ApiBody({ type: RetryJobDto, required: false })
  @ApiResponse({ status: 200, type: JobDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: 'The job is not dead' })
  retry(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Body() body: unknown) {
    return this.changes.retry(tenant, id, body);
  }
}
