export * from './delivery-metrics';
export * from './ready/ready-queues';
