import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';

export class FieldIssueDto {
  @ApiProperty({ example: 'runAt' })
  field!: string;

  @ApiProperty({ example: 'missing_zone', description: 'Stable machine-readable rule name.' })
  rule!: string;

  @ApiProperty({ example: 'runAt must include a UTC offset or Z (e.g. 2026-11-30T09:00:00Z), got "2026-11-30T09:00:00"' })
  message!: string;
}

/** Every error on /v1 has this shape. */
export class ErrorDto {
  @ApiProperty({ example: 400 })
  statusCode!: number;

  @ApiProperty({ example: 'Bad Request' })
  error!: string;

  @ApiProperty({ example: 'runAt must include a UTC offset or Z (e.g. 2026-11-30T09:00:00Z), got "2026-11-30T09:00:00"' })
  message!: string;

  @ApiProperty({ type: [FieldIssueDto] })
  details!: FieldIssueDto[];
}

/** Routes that take a JSON body: what Fastify refuses before the controller runs. */
export function ApiJsonBodyErrors(): MethodDecorator {
  return applyDecorators(
    ApiResponse({ status: 415, type: ErrorDto, description: 'Content-Type is not application/json (details[0].field = "content-type")' }),
  );
}

/** Tenant controllers: a suspended tenant is refused, and every request spends the tenant's request rate (job creation: its ingest rate) first. */
export const ApiTenantRateLimit = (): ClassDecorator & MethodDecorator =>
  applyDecorators(
    ApiResponse({ status: 403, type: ErrorDto, description: 'The tenant is suspended (`details[0].rule = "suspended"`)' }),
    ApiResponse({ status: 429, type: ErrorDto, description: 'Over the tenant\'s request rate (`details[0].rule = "request_rate_limit"`), spent before the request is validated; see Retry-After' }),
  );
