// One Jest run for every tier: pure domain specs, service specs and integration specs that talk
// to the real Postgres and Redis. Each integration file gets its own database and queue prefix
// (test/support), so files run in parallel, one Jest worker per core: on 2 cores the suite takes
// ~160 s against ~220 s in band (a test that stalls a server starts a private one for itself).
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
    },
    module: { type: 'commonjs' },
  },
];

module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/examples', '<rootDir>/test', '<rootDir>/k8s', '<rootDir>/bench'],
  testMatch: ['**/*.spec.ts'],
  transform: { '^.+\\.(t|j|mj)s$': swc },
  // Nest 12 (and @fastify/static's content-disposition, swagger-parser's ref parser) ship ESM only; swc compiles them for Jest.
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|@fastify/static|croner|content-disposition|@apidevtools/json-schema-ref-parser)/)'],
  moduleNameMapper: {
    '^@almanac/config$': '<rootDir>/libs/config/src/index.ts',
    '^@almanac/delivery$': '<rootDir>/libs/delivery/src/index.ts',
    '^@almanac/kinds$': '<rootDir>/libs/kinds/src/index.ts',
    '^@almanac/domain$': '<rootDir>/libs/domain/src/index.ts',
    '^@almanac/persistence$': '<rootDir>/libs/persistence/src/index.ts',
    '^@almanac/platform$': '<rootDir>/libs/platform/src/index.ts',
    '^@almanac/worker-runtime$': '<rootDir>/libs/worker-runtime/src/index.ts',
    '^@almanac/client$': '<rootDir>/libs/client/src/index.ts',
    // Test support (real databases, queues, the delivery harness): tests only, never built.
    '^@almanac/testing/(.*)$': '<rootDir>/test/support/$1',
  },
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: '100%',
};
