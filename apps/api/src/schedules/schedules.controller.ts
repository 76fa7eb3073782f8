import type { TenantRecord } from '@almanac/persistence';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, TenantAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ApiTenantRateLimit, ErrorDto } from '../http/error.dto';
import { refuseQuery } from '../http/validation';
import { RequestOver } from '../http/request-deadline.interceptor';
import type { FastifyReply } from 'fastify';
import { CreateScheduleDto, OccurrencePreviewDto, ScheduleDto, SchedulePageDto, ScheduleRunPageDto, UpdateScheduleDto } from './schedule.dto';
import { RUNS_PAGE, RUNS_PAGE_MAX, ScheduleRunsService } from './schedule-runs.service';
import { SchedulesService } from './schedules.service';

const ID = { name: 'id', example: '42' };

@ApiTags('schedules')
@ApiBearerAuth('tenant')
@ApiResponse({ status: 401, type: ErrorDto })
@ApiTenantRateLimit()
@Controller('v1/schedules')
@UseGuards(TenantAuthGuard)
export class SchedulesController {
  constructor(
    private readonly schedules: SchedulesService,
    private readonly runs: ScheduleRunsService,
  ) {}

  @Post()
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Create a recurring schedule (idempotent by key)' })
  @ApiBody({ type: CreateScheduleDto })
  @ApiResponse({ status: 201, type: ScheduleDto })
  @ApiResponse({ status: 200, type: ScheduleDto, description: 'Same request again: the existing schedule' })
  @ApiResponse({ status: 400, type: ErrorDto, description: 'e.g. invalid cron or time zone (details name the field and rule)' })
  @ApiResponse({ status: 403, type: ErrorDto, description: 'The tenant is suspended (`details[0].rule = "suspended"`), or holds its limit of schedules (`"quota"`)' })
  @ApiResponse({ status: 409, type: ErrorDto })
  @ApiResponse({ status: 413, type: ErrorDto, description: 'Its payload would take the tenant\'s stored bytes past its quota (`details[0].rule = "stored_bytes_quota"`)' })
  async create(@CurrentTenant() tenant: TenantRecord, @Body() body: unknown, @Res({ passthrough: true }) res: FastifyReply) {
    const { created, schedule } = await this.schedules.create(tenant, body);
    res.status(created ? 201 : 200);
    return schedule;
  }

  @Get()
  @ApiOperation({ summary: 'List schedules by key' })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', example: 100 })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiResponse({ status: 200, type: SchedulePageDto })
  list(@CurrentTenant() tenant: TenantRecord, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.schedules.list(tenant, query, over);
  }

  @Get(':id')
  @ApiParam(ID)
  @ApiResponse({ status: 200, type: ScheduleDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  get(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    refuseQuery(query);
    return this.schedules.get(tenant, id, over);
  }

  @Get(':id/next')
  @ApiOperation({ summary: 'Preview the next N run times, in UTC and in the schedule\'s zone' })
  @ApiParam(ID)
  @ApiQuery({ name: 'count', required: false, type: 'integer', example: 5, description: '1..100, default 10' })
  @ApiResponse({ status: 200, type: OccurrencePreviewDto })
  preview(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.schedules.preview(tenant, id, query, over);
  }

  @Get(':id/runs')
  @ApiOperation({ summary: "Each occurrence in a window, oldest first, with what became of it: did the 02:00 run happen, when did it start, what did it return" })
  @ApiParam(ID)
  @ApiQuery({ name: 'date', required: false, example: '2026-12-01', description: "A day (YYYY-MM-DD) in the schedule's own zone; instead of from/to" })
  @ApiQuery({ name: 'from', required: false, type: String, format: 'date-time', description: "Start of the window (exclusive); without a zone, in the schedule's zone. Default: a day before to" })
  @ApiQuery({ name: 'to', required: false, type: String, format: 'date-time', description: 'End of the window (inclusive). Default: now' })
  @ApiQuery({ name: 'limit', required: false, type: 'integer', example: RUNS_PAGE, description: `1..${RUNS_PAGE_MAX}, default ${RUNS_PAGE}` })
  @ApiQuery({ name: 'cursor', required: false })
  @ApiResponse({ status: 200, type: ScheduleRunPageDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  runsOf(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    return this.runs.list(tenant, id, query, over);
  }

  @Patch(':id')
  @ApiJsonBodyErrors()
  @ApiOperation({
    summary: 'Change a schedule; a cron/zone change bumps version and replaces the occurrences not due yet',
    description: 'A cron or zone change removes the occurrences not started and not due yet and makes the new timing\'s from now on; a kind, payload or maxAttempts change makes the ones not due within 2 minutes again with the new values. Occurrences already due and waiting for a slot, or waiting for a retry, run as they were made.',
  })
  @ApiParam(ID)
  @ApiBody({ type: UpdateScheduleDto })
  @ApiResponse({ status: 200, type: ScheduleDto })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: 'Changed by another request meanwhile (`details[0].rule = "concurrent_update"`): send it again' })
  @ApiResponse({ status: 413, type: ErrorDto, description: 'A new payload would take the tenant\'s stored bytes past its quota (`details[0].rule = "stored_bytes_quota"`)' })
  update(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Body() body: unknown) {
    return this.schedules.update(tenant, id, body);
  }

  @Delete(':id')
  @ApiOperation({ summary: 'Delete a schedule and its not-yet-run occurrences' })
  @ApiParam(ID)
  @ApiResponse({ status: 200, type: ScheduleDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  remove(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.schedules.remove(tenant, id);
  }

  @Post(':id/pause')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Stop its runs: occurrences not started yet are removed (removedOccurrences), none are made while paused',
    description: 'Runs already started (running, or waiting for a retry) go on. nextRunAt moves back to the earliest removed occurrence, so a resume makes them again (those that fell due meanwhile per the `missed` policy).',
  })
  @ApiParam(ID)
  @ApiResponse({ status: 200, type: ScheduleDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  pause(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.schedules.setPaused(tenant, id, true);
  }

  @Post(':id/resume')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Resume; occurrences missed while paused follow the `missed` policy',
    description: 'skip: none of the occurrences due while paused run, the next is the first at or after now; latest: the last of them runs; all: all of them run (at most ALMANAC_SCHEDULE_MISSED_CAP, the most recent).',
  })
  @ApiParam(ID)
  @ApiResponse({ status: 200, type: ScheduleDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  resume(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.schedules.setPaused(tenant, id, false);
  }
}
