import { Injectable, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { InjectPinoLogger, Logger as NestPinoLogger, LoggerModule, PinoLogger } from 'nestjs-pino';
import { Writable } from 'node:stream';
import type { Options } from 'pino-http';
import { httpAdapter, NEST_HTTP_OPTIONS } from '../bootstrap/bootstrap-role';
import { loadConfig } from '../config/almanac-config';
import { loggerParams } from './logging';

// Its own file: nestjs-pino keeps one root logger per process (module), built by the first app.
describe('log lines of a role', () => {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const lines = () => chunks.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const config = loadConfig({ ALMANAC_LOG_LEVEL: 'info' });
  const params = loggerParams(config, 'api');
  const options = params.pinoHttp as Options;

  it('names the part of the role that wrote a line in one field, `component`, however it got its logger', async () => {
    @Injectable()
    class Parts {
      @InjectPinoLogger('hot-routing') readonly injected!: PinoLogger;
      constructor(readonly pino: PinoLogger) {}
    }
    @Module({ imports: [LoggerModule.forRoot({ ...loggerParams(config, 'api'), pinoHttp: [options, stream] })], providers: [Parts] })
    class PartsModule {}
    const app = await NestFactory.create(PartsModule, httpAdapter(config), { ...NEST_HTTP_OPTIONS, logger: false });
    try {
      app.useLogger(app.get(NestPinoLogger));
      await app.init(); // nestjs-pino sets its root logger here
      const parts = app.get(Parts);
      parts.injected.warn({ jobs: 3 }, 'enqueue failed'); // a Nest service
      parts.pino.logger.child({ component: 'dispatcher' }).warn({ pool: 'p' }, 'line parked'); // a plain class given a child
      new Logger('nest-core').warn('framework message'); // Nest's own
    } finally {
      await app.close();
    }
    expect(lines().slice(-3).map((l) => [l.role, l.component, l.msg])).toEqual([
      ['api', 'hot-routing', 'enqueue failed'],
      ['api', 'dispatcher', 'line parked'],
      ['api', 'nest-core', 'framework message'],
    ]);
    expect(lines().at(-3)).toMatchObject({ jobs: 3 });
    expect(lines()[0]).toMatchObject({ component: 'NestApplication' }); // Nest's own lines too
    expect(lines().at(-3)).not.toHaveProperty('context');
  });
});
