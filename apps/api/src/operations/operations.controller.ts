import type { TenantRecord } from '@almanac/persistence';
import { Body, Controller, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { CurrentTenant, TenantAuthGuard } from '../auth/guards';
import { ApiJsonBodyErrors, ApiTenantRateLimit, ErrorDto } from '../http/error.dto';
import { BulkCancelDto, BulkRescheduleDto, OperationDto } from './operation.dto';
import { OperationsService } from './operations.service';

const RUNS = 'Runs in the background (the promoter), in chunks of 5,000 jobs; follow it with GET /v1/operations/:id.';

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
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Too many operations pending or running for this tenant, or over its request rate; see Retry-After' })
  bulkCancel(@CurrentTenant() tenant: TenantRecord, @Body() body: unknown) {
    return this.operations.bulkCancel(tenant, body);
  }

  @Post('jobs/bulk-reschedule')
  @HttpCode(202)
  @ApiJsonBodyErrors()
  @ApiOperation({ summary: 'Move every job that matches a filter and has not started', description: `${RUNS} Each job is re-tiered by its new time.` })
  @ApiBody({ type: BulkRescheduleDto })
  @ApiResponse({ status: 202, type: OperationDto, description: 'Accepted: the operation, pending' })
  @ApiResponse({ status: 400, type: ErrorDto })
  @ApiResponse({ status: 429, type: ErrorDto, description: 'Too many operations pending or running for this tenant, or over its request rate; see Retry-After' })
  bulkReschedule(@CurrentTenant() tenant: TenantRecord, @Body() body: unknown) {
    return this.operations.bulkReschedule(tenant, body);
  }

  @Get('operations/:id')
  @ApiOperation({ summary: 'A bulk operation: its state, progress and counts' })
  @ApiParam({ name: 'id', example: '42', description: "Operation id (another tenant's id answers 404)." })
  @ApiResponse({ status: 200, type: OperationDto })
  @ApiResponse({ status: 404, type: ErrorDto })
  get(@CurrentTenant() tenant: TenantRecord, @Param('id') id: string) {
    return this.operations.get(tenant, id);
  }
}
