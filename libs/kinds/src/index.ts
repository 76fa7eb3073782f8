export * from './handler';
export * from './handler-registry';
export * from './kind-catalog';
export * from './kind-routes';
export * from './payload-schema';
export * from './kind-assertion';
