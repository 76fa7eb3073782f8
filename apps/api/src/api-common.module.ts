import {
  AttemptsRepository,
  JobChangesRepository,
  JobQueriesRepository,
  JobsRepository,
  KindsRepository,
  ScheduleRunsRepository,
  SchedulesRepository,
  TenantKeysRepository,
  TenantsRepository,
} from '@almanac/persistence';
import { Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { API_SETTINGS, loadApiSettings } from './api-settings';
import { AuthEvents } from './auth/auth-events';
import { EarlyAuthHook } from './auth/early-auth.hook';
import { AdminAttempts, AdminAuthGuard, TenantAuthGuard } from './auth/guards';
import { TenantAuthService } from './auth/tenant-auth.service';
import { ApiExceptionFilter } from './http/api-exception.filter';
import { HttpMetricsHook } from './http/http-metrics';
import { RequestClockHook } from './http/request-clock';
import { RequestDeadlineInterceptor } from './http/request-deadline.interceptor';
import { HotRoutingService } from './jobs/hot-routing.service';
import { KindsService } from './kinds/kinds.service';
import { IngestRateLimiter } from './rate-limit/ingest-rate-limiter';
import { RequestRateLimiter } from './rate-limit/request-rate-limiter';
import { RequestsInFlight } from './rate-limit/requests-in-flight';
import { RateLimits } from './rate-limit/shared-token-buckets';
import { StoredBytesQuota } from './tenants/stored-bytes-quota';

const REPOSITORIES = [
  JobsRepository,
  JobQueriesRepository,
  JobChangesRepository,
  KindsRepository,
  TenantsRepository,
  TenantKeysRepository,
  AttemptsRepository,
  SchedulesRepository,
  ScheduleRunsRepository,
];

/** What every API feature module shares: settings, auth, error shape, repositories, routing. */
@Module({
  providers: [
    // Read (and validated) when the module is built: a bad ALMANAC_* value stops boot.
    { provide: API_SETTINGS, useFactory: () => loadApiSettings(process.env) },
    { provide: APP_FILTER, useClass: ApiExceptionFilter },
    { provide: APP_INTERCEPTOR, useClass: RequestDeadlineInterceptor },
    RateLimits,
    // One instance: the interceptor on every /v1 tenant request, and the console's pages and forms (RequestRateLimiter.take).
    RequestRateLimiter,
    { provide: APP_INTERCEPTOR, useExisting: RequestRateLimiter },
    // After the rate limit (a request it refuses holds no slot); one instance, the console's pages and forms hold slots too.
    RequestsInFlight,
    { provide: APP_INTERCEPTOR, useExisting: RequestsInFlight },
    ...REPOSITORIES,
    TenantAuthService,
    AuthEvents,
    TenantAuthGuard,
    AdminAuthGuard,
    AdminAttempts,
    IngestRateLimiter,
    HotRoutingService,
    KindsService,
    HttpMetricsHook,
    EarlyAuthHook,
    RequestClockHook,
    // One instance: jobs and schedules charge the same per-tenant count.
    StoredBytesQuota,
  ],
  exports: [API_SETTINGS, ...REPOSITORIES, TenantAuthService, AuthEvents, TenantAuthGuard, AdminAuthGuard, AdminAttempts, IngestRateLimiter, RequestRateLimiter, RequestsInFlight, HotRoutingService, KindsService, StoredBytesQuota],
})
export class ApiCommonModule {}
