import type { components, operations } from './generated/openapi';

// Every type here is read from generated/openapi.ts, which openapi-typescript makes from the
// server's own OpenAPI document (npm run generate:client; a test fails when it is out of date).
type Schemas = components['schemas'];
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
/** Query parameters travel as text; the client also takes numbers (and Dates for instants). */
type Loosened<Q, Numbers extends keyof Q, Instants extends keyof Q = never> = Omit<Q, Numbers | Instants> & { [K in Numbers]?: Q[K] | number } & {
  [K in Instants]?: Q[K] | Date;
};

export type FieldIssue = Schemas['FieldIssueDto'];
export type ErrorBody = Schemas['ErrorDto'];

export type Job = Schemas['JobDto'];
export type JobState = Job['state'];
export type JobDetail = Schemas['JobDetailDto'];
/** What the key of a job retention removed keeps (a create with `replay: 'result'`). */
export type RemovedJob = Schemas['RemovedJobDto'];
export type Attempt = Schemas['AttemptDto'];
export type JobPage = Schemas['JobPageDto'];
export type AttemptPage = Schemas['AttemptPageDto'];
export type BatchResult = Schemas['BatchResultDto'];
export type RetryJob = Schemas['RetryJobDto'];
/** What GET /v1/jobs answers: a JobPage, or with `key` the one JobDetail. */
export type JobSearchAnswer = operations['JobsController_search']['responses'][200]['content']['application/json'];
/** GET /v1/jobs without `key` (a lookup by key is jobs.findByKey). */
export type JobListQuery = Loosened<Omit<Query<'JobsController_search'>, 'key'>, 'limit', 'from' | 'to'>;

export type Schedule = Schemas['ScheduleDto'];
export type SchedulePage = Schemas['SchedulePageDto'];
export type ScheduleListQuery = Loosened<Query<'SchedulesController_list'>, 'limit'>;
export type OccurrencePreview = Schemas['OccurrencePreviewDto'];
export type ScheduleRun = Schemas['ScheduleRunDto'];
export type ScheduleRunPage = Schemas['ScheduleRunPageDto'];
/** `date` (a day in the schedule's zone), or `from`/`to`: with a zone, or local to the schedule's (a Date is an instant). */
export type ScheduleRunsQuery = Loosened<Query<'SchedulesController_runsOf'>, 'limit', 'from' | 'to'>;

export type Operation = Schemas['OperationDto'];
export type BulkFilter = Schemas['BulkFilterDto'];
export type BulkCancel = Schemas['BulkCancelDto'];
export type BulkReschedule = Schemas['BulkRescheduleDto'];

export type Kind = Schemas['KindDto'];
export type KindList = Schemas['KindListDto'];

export type Tenant = Schemas['TenantDto'];
export type TenantSummary = Schemas['TenantSummaryDto'];
export type TenantList = Schemas['TenantListDto'];
export type TenantListQuery = Loosened<Query<'TenantsController_list'>, 'limit'>;
export type CreateTenant = Schemas['CreateTenantDto'];
export type CreatedTenant = Schemas['CreatedTenantDto'];
export type UpdateTenant = Schemas['UpdateTenantDto'];
export type ApiKey = Schemas['KeyDto'];
export type CreatedApiKey = Schemas['CreatedKeyDto'];
export type ApiKeyList = Schemas['KeyListDto'];
export type SigningSecret = Schemas['SigningSecretDto'];
export type CreatedSigningSecret = Schemas['CreatedSigningSecretDto'];
export type SigningSecretList = Schemas['SigningSecretListDto'];
export type RotateSigningSecret = Schemas['CreateSigningSecretDto'];
