import type { TenantRecord } from '@almanac/persistence';
import { Body, Controller, Get, HttpCode, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentTenant, TenantAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ApiTenantRateLimit, ErrorDto } from '../http/error.dto';
import { RequestOver } from '../http/request-deadline.interceptor';
import { refuseQuery } from '../http/validation';
import { BulkCancelDto, BulkRescheduleDto, OperationDto } from './operation.dto';
import type { OperationView } from './operation-view';
import { type AcceptedOperation, OperationsService } from './operations.service';

const RUNS = 'Runs in the background (the promoter), in chunks of 5,000 jobs; follow it with GET /v1/operations/:id. With a `key`, safe to resend.';
const RESENT = 'The same request with this key was made before: its operation, as it is now';
const KEY_CONFLICT = 'The key names an operation with a different action, filter, runAt or shiftBySeconds (rule `conflict`)';

@ApiTags('operations')
@ApiBearerAuth('tenant')
@ApiResponse({ status: 401, type: ErrorDto, description: 'Missing or unknown API key' })
@ApiTenantRateLimit()
@Controller('v1')
@UseGuards(TenantAuthGuard)
export class OperationsController {
  constructor(private readonly operations: OperationsService) {}

  @Post('jobs/bulk-cancel')
  @HttpCode(202)
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Cancel every job that matches a filter and has not started', description: RUNS })
  @ApiBody({ type: BulkCancelDto })
  @ApiResponse({ status: 202, type: OperationDto, description: 'Accepted: the operation, pending' })
  @ApiResponse({ status: 200, type: OperationDto, description: RESENT })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: KEY_CONFLICT })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Too many operations pending or running for this tenant, or over its request rate; see Retry-After' })
  async bulkCancel(@CurrentTenant() tenant: TenantRecord, @Body() body: unknown, @Res({ passthrough: true }) res: FastifyReply) {
    return answer(await this.operations.bulkCancel(tenant, body), res);
  }

  @Post('jobs/bulk-reschedule')
  @HttpCode(202)
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Move every job that matches a filter and has not started', description: `${RUNS} Each job is re-tiered by its new time.` })
  @ApiBody({ type: BulkRescheduleDto })
  @ApiResponse({ status: 202, type: OperationDto, description: 'Accepted: the operation, pending' })
  @ApiResponse({ status: 200, type: OperationDto, description: RESENT })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: KEY_CONFLICT })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Too many operations pending or running for this tenant, or over its request rate; see Retry-After' })
  async bulkReschedule(@CurrentTenant() tenant: TenantRecord, @Body() body: unknown, @Res({ passthrough: true }) res: FastifyReply) {
    return answer(await this.operations.bulkReschedule(tenant, body), res);
  }

  @Get('operations/:id')
  @ApiOperation({ summary: 'A bulk operation: its state, progress and counts' })
  @ApiParam({ name: 'id', example: '42', description: "Operation id (another tenant's id answers 404)." })
  @ApiResponse({ status: 200, type: OperationDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  get(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string, @Query() query: Record<string, unknown>, @RequestOver() over: AbortSignal) {
    refuseQuery(query);
    return this.operations.get(tenant, id, over);
  }

  @Post('operations/:id/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Stop a bulk operation',
    description: 'Its chunks not yet applied never are; jobs already cancelled or moved stay so (`changed` counts them). A chunk being applied as it is cancelled is the last. Safe to resend.',
  })
  @ApiParam({ name: 'id', example: '42', description: "Operation id (another tenant's id answers 404)." })
  @ApiResponse({ status: 200, type: OperationDto, description: 'Cancelled (or already cancelled)' })
  @ApiResponse({ status: 404, type: ErrorDto })
  @ApiResponse({ status: 409, type: ErrorDto, description: 'Done or failed (rule `not_cancellable`)' })
  cancel(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.operations.cancel(tenant, id);
  }
}

/** 202 for a new operation, 200 for the one a resent key names (the job create's 201 and 200). */
function answer(accepted: AcceptedOperation, res: FastifyReply): OperationView {
  res.status(accepted.created ? 202 : 200);
  return accepted.operation;
}
