import type { Logger } from 'nestjs-pino';
import { QuietBootLogger } from './quiet-boot-logger';

describe('QuietBootLogger', () => {
  it("moves Nest's boot lines (modules, routes) to debug and passes everything else through", () => {
    const calls: [string, unknown[]][] = [];
    const record = (level: string) => (...args: unknown[]) => void calls.push([level, args]);
    const inner = { log: record('log'), debug: record('debug'), warn: record('warn'), error: record('error'), verbose: record('verbose'), fatal: record('fatal') };
    const logger = new QuietBootLogger(inner as unknown as Logger);
    logger.log('Mapped {/v1/jobs, POST} route', 'RouterExplorer');
    logger.log('ApiModule dependencies initialized', 'InstanceLoader');
    logger.log('hot queue consumer started', 'HotConsumer');
    logger.warn('Redis is slow', 'HotRouting');
    expect(calls).toEqual([
      ['debug', ['Mapped {/v1/jobs, POST} route', 'RouterExplorer']],
      ['debug', ['ApiModule dependencies initialized', 'InstanceLoader']],
      ['log', ['hot queue consumer started', 'HotConsumer']],
      ['warn', ['Redis is slow', 'HotRouting']],
    ]);
  });
});
