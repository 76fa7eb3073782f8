import { Controller, Get, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { LoggerModule } from 'nestjs-pino';
import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import pinoHttp, { Options } from 'pino-http';
import request from 'supertest';
import { loadConfig } from '../config/almanac-config';
import { httpAdapter, NEST_HTTP_OPTIONS } from '../bootstrap/bootstrap-role';
import pretty from 'pino-pretty';
import pino from 'pino';
import { loggerParams, logTransport, PRETTY_OPTIONS } from './logging';

function capture(): { stream: Writable; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  return { stream, lines: () => chunks.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

describe('loggerParams', () => {
  const params = loggerParams(loadConfig({ ALMANAC_LOG_LEVEL: 'info' }), 'api');
  const options = params.pinoHttp as Options;

  async function logRequest(path: string, headers: Record<string, string>) {
    const out = capture();
    const log = pinoHttp(options, out.stream);
    const server = createServer((req, res) => {
      log(req, res);
      res.end('ok');
    });
    let r = request(server).post(path).send({ payload: 'the-payload-body' });
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    await r;
    return out.lines();
  }

  it('writes JSON with the role and redacts credentials, never the body', async () => {
    const lines = await logRequest('/v1/jobs', { Authorization: 'Bearer tenant-secret-key', Cookie: 's=1' });
    expect(lines).toHaveLength(1);
    const text = JSON.stringify(lines);
    expect(lines[0]).toMatchObject({ role: 'api', req: { headers: { authorization: '[redacted]', cookie: '[redacted]' } } });
    expect(text).not.toContain('tenant-secret-key');
    expect(text).not.toContain('the-payload-body');
  });

  it('names a request by method, path and status; pretty on a terminal, one readable line without the record', async () => {
    const lines = await logRequest('/v1/jobs?x=1', {});
    expect(lines[0]).toMatchObject({ msg: 'POST /v1/jobs?x=1 200' });
    expect(logTransport(loadConfig({ ALMANAC_LOG_FORMAT: 'json' }))).toBeUndefined();
    expect(logTransport(loadConfig({ ALMANAC_LOG_FORMAT: 'pretty' }))).toEqual({ target: 'pino-pretty', options: PRETTY_OPTIONS });
    // The same options through pino-pretty itself (in-process here; the role runs it in pino's transport thread).
    let text = '';
    const out = pretty({ ...PRETTY_OPTIONS, colorize: false, destination: new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) }), sync: true });
    pino({ base: { role: 'api' } }, out).child({ component: 'hot-routing' }).info({ req: { headers: { a: 1 } } }, 'POST /v1/jobs 201');
    expect(text).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: api\/hot-routing: POST \/v1\/jobs 201\n$/);
  });

  it('redacts the parameters TypeORM attaches to a failed query (they carry payloads)', () => {
    const out = capture();
    const log = pinoHttp(options, out.stream);
    const err = Object.assign(new Error('connection terminated'), { query: 'INSERT INTO schedules …', parameters: ['{"card":"4111-secret"}'] });
    log.logger.error({ err }, 'unhandled error');
    const text = JSON.stringify(out.lines());
    expect(text).toContain('connection terminated');
    expect(text).not.toContain('4111-secret');
  });

  it('logs every request of a Nest app on the platform\'s HTTP adapter (the middleware is really applied)', async () => {
    const out = capture();
    const config = loadConfig({ ALMANAC_LOG_LEVEL: 'info' });
    @Controller('v1/probe')
    class ProbeController {
      @Get(':id')
      get() {
        return { ok: true };
      }
    }
    @Controller('health')
    class HealthProbeController {
      @Get('ready')
      get() {
        return { ok: true };
      }
    }
    @Module({ imports: [LoggerModule.forRoot({ ...loggerParams(config, 'api'), pinoHttp: [options, out.stream] })], controllers: [ProbeController, HealthProbeController] })
    class ProbeModule {}
    const app = await NestFactory.create(ProbeModule, httpAdapter(config), { ...NEST_HTTP_OPTIONS, logger: false });
    try {
      await app.init();
      await app.getHttpAdapter().getInstance().ready();
      await request(app.getHttpServer()).get('/v1/probe/42').set('Authorization', 'Bearer tenant-secret-key').expect(200);
      await request(app.getHttpServer()).get('/v1/nowhere').expect(404);
      await request(app.getHttpServer()).get('/health/ready').expect(200); // a probe: not logged
    } finally {
      await app.close();
    }
    const lines = out.lines();
    expect(lines.map((l) => [(l.req as { url: string }).url, (l.res as { statusCode: number }).statusCode])).toEqual([
      ['/v1/probe/42', 200],
      ['/v1/nowhere', 404],
    ]);
    expect(JSON.stringify(lines)).not.toContain('tenant-secret-key');
  });

  it('does not log probe and scrape requests, nor the API docs page and its assets', async () => {
    expect(await logRequest('/health/ready', {})).toEqual([]);
    expect(await logRequest('/metrics', {})).toEqual([]);
    expect(await logRequest('/docs', {})).toEqual([]);
    expect(await logRequest('/docs/swagger-ui.css', {})).toEqual([]);
    expect(await logRequest('/docs-json', {})).toEqual([]);
    expect(await logRequest('/docsy', {})).toHaveLength(1);
  });

  it('takes its level from ALMANAC_LOG_LEVEL', () => {
    expect((loggerParams(loadConfig({ ALMANAC_LOG_LEVEL: 'warn' }), 'x').pinoHttp as Options).level).toBe('warn');
  });
});
