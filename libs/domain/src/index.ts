export * from './job-state';
