import type { Setting } from '../setting';

const TOOL = ['tool'] as const;
const PORT = { type: 'int', min: 1, max: 65535, readers: TOOL } as const;

/** Read by `npm start` (scripts/lib/local-services.js), never by a role. */
export const START_SETTINGS = {
  ALMANAC_START_SERVICES: {
    type: 'enum',
    values: ['auto', 'private'],
    default: 'auto',
    readers: TOOL,
    meaning: '`private` skips the servers on the default ports and always uses private ones',
  },
  ALMANAC_START_PG_PORT: { ...PORT, default: 54329, defaultText: '`54329` when free, else any free port', meaning: "the private Postgres server's port" },
  ALMANAC_START_REDIS_PORT: { ...PORT, default: 63799, defaultText: '`63799` when free, else any free port', meaning: "the private Redis server's port" },
} as const satisfies Record<string, Setting>;

/**
 * Read around the roles, never by one: the schema wait of the Kubernetes initContainer, CI,
 * tests and benchmarks, and the demo key `npm start` prints. The test helpers read theirs through
 * readSetting; scripts, .ci/run and benchmarks (run before or apart from the built code) parse
 * theirs themselves; test/tool-defaults.spec.ts fails when their default differs from this one.
 */
export const TOOLING_SETTINGS = {
  ALMANAC_APP_DIR: {
    type: 'string',
    defaultText: 'the working directory',
    readers: TOOL,
    meaning: 'where the initContainer (`k8s/base/wait-for-schema.js`) finds the built code',
  },
  ALMANAC_WAIT_FOR_SCHEMA_TIMEOUT_S: { type: 'seconds', default: 600, readers: TOOL, meaning: 'how long the initContainer waits for pending migrations to be applied before it fails' },
  ALMANAC_WAIT_FOR_SCHEMA_INTERVAL_MS: { type: 'ms', default: 2000, readers: TOOL, meaning: 'how often the initContainer looks' },
  ALMANAC_KEY: {
    type: 'string',
    readers: TOOL,
    meaning: "the demo tenant's API key, in the `export` line `npm start` prints for the shell (the curl examples use it; no role reads it)",
  },
  ALMANAC_CI_START_PORT: { ...PORT, default: 3999, meaning: '`.ci/run`: the port of its `npm start -- --check`' },
  ALMANAC_CI_CLUSTER_PORT: { ...PORT, default: 4300, meaning: '`.ci/run`: the first port of its `npm run cluster -- --check`' },
  ALMANAC_NODE24_DIR: {
    type: 'string',
    defaultText: '`$XDG_CACHE_HOME/almanac/node-24` (`~/.cache/…`)',
    readers: TOOL,
    meaning: '`.ci/run`: where it keeps the Node 24 that runs the suite',
  },
  ALMANAC_CHROMIUM: { type: 'string', default: '/usr/bin/chromium', readers: TOOL, meaning: "the browser of the console's browser test (`.ci/run` installs it when absent)" },
  ALMANAC_TEST_PG_URL: {
    type: 'string',
    default: 'postgres://postgres@127.0.0.1:5432',
    readers: TOOL,
    meaning: 'the Postgres server the tests make their databases on (a superuser, no database in the URL)',
  },
  ALMANAC_TEST_REDIS_URL: { type: 'string', default: 'redis://127.0.0.1:6379', readers: TOOL, meaning: 'the Redis server of the tests (each test file has its own key prefix)' },
  ALMANAC_TEST_TEMPLATE_DB: {
    type: 'string',
    defaultText: 'set by Jest',
    readers: TOOL,
    meaning: "the migrated database each test file's own database is copied from; Jest's global setup sets it",
  },
  ALMANAC_TEST_LOG: { type: 'string', default: 'silent', readers: TOOL, meaning: "the log level of the tests' delivery harness (`debug` to watch a test's deliveries)" },
  ALMANAC_WRITE_CONFIG_DOC: {
    type: 'bool',
    default: false,
    readers: TOOL,
    meaning: '`npm run generate:config-doc` sets it: the reference test writes these tables instead of comparing them',
  },
  ALMANAC_BENCH_PG_URL: {
    type: 'string',
    default: 'postgres://postgres@127.0.0.1:5432',
    readers: TOOL,
    meaning: 'the Postgres server the benchmarks make their databases on',
  },
} as const satisfies Record<string, Setting>;
