export * from './database-config';
export * from './data-source';
export * from './job-id';
export * from './job-state.codec';
export * from './migrations';
