// @almanac/client: a typed client for the Almanac HTTP API, with no dependency beyond fetch.
export * from './admin-client';
export * from './api-types';
export * from './client';
export {
  AlmanacError,
  ConflictError,
  type ErrorAnswer,
  ForbiddenError,
  InvalidIdError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  RequestTimeoutError,
  UnauthorizedError,
  UnavailableError,
  ValidationError,
} from './errors';
export type { CreatedJob, JobsApi, ReplayedRemovedJob } from './jobs-api';
export type { AnyKindPayloads, BuiltInKindPayloads, CreateJobRequest, CreateScheduleRequest, KindName, UpdateScheduleRequest } from './kind-payloads';
export type { CreatedSchedule, SchedulesApi } from './schedules-api';
export type { CallOptions, ClientOptions } from './transport';
