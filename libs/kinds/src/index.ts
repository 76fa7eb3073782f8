export * from './handler';
export * from './kind-catalog';
export * from './payload-schema';
