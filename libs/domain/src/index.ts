export * from './errors';
export * from './job-state';
export * from './keys';
export * from './run-at';
export * from './tier';
export * from './outcome';
export * from './retry';
