import type { components } from './generated/openapi';

type Schemas = components['schemas'];
type CreateJobSchema = Extract<keyof Schemas, `CreateJob.${string}`>;

/**
 * Kind name → payload type of the kinds Almanac ships (noop, charge, http, …), read from the
 * `CreateJob.<kind>` schemas the API publishes for its registered kinds. The default of
 * createClient's type parameter; a team's own kinds are added with `&`:
 * `createClient<BuiltInKindPayloads & { 'resize-image': { url: string } }>(…)`.
 */
export type BuiltInKindPayloads = {
  [N in CreateJobSchema as N extends `CreateJob.${infer K}` ? K : never]: Schemas[N]['payload'];
};

/** Any kind name with any JSON payload, for a client that checks nothing at compile time. */
export type AnyKindPayloads = Record<string, unknown>;

export type KindName<P extends object> = keyof P & string;

/** Required when the kind's payload type has no room for undefined (the API refuses a missing one). */
type PayloadField<T> = undefined extends T ? { payload?: T } : { payload: T };

type Simplify<T> = { [K in keyof T]: T[K] } & {};

type JobFields = Omit<Schemas['CreateJobDto'], 'kind' | 'payload' | 'runAt'> & {
  /** An instant with a zone (`2026-11-30T09:00:00+01:00`), or a Date. */
  runAt: string | Date;
};

/** A job to create: one member per kind, so `payload` is checked against its `kind`. */
export type CreateJobRequest<P extends object> = {
  [K in KindName<P>]: Simplify<{ kind: K } & PayloadField<P[K]> & JobFields>;
}[KindName<P>];

type ScheduleFields = Omit<Schemas['CreateScheduleDto'], 'kind' | 'payload'>;

/** A recurring schedule to create, its payload checked against its kind like a job's. */
export type CreateScheduleRequest<P extends object> = {
  [K in KindName<P>]: Simplify<{ kind: K } & PayloadField<P[K]> & ScheduleFields>;
}[KindName<P>];

/**
 * A change to a schedule: with `kind`, a payload of that kind; without it, a payload of any
 * known kind (the API checks it against the schedule's stored kind).
 */
export type UpdateScheduleRequest<P extends object> = Omit<Schemas['UpdateScheduleDto'], 'kind' | 'payload'> &
  ({ [K in KindName<P>]: { kind: K; payload?: P[K] } }[KindName<P>] | { kind?: undefined; payload?: P[KindName<P>] });
