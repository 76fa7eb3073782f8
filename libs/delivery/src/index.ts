export * from './delivery-metrics';
export * from './handler-registry';
export * from './kind-routes';
export * from './ready/ready-queues';
