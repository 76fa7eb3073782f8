import { ConfigError } from './env';
import { readSetting } from './read-setting';

describe('readSetting', () => {
  it('applies the declared default, and reads a set value within the declared bounds', () => {
    expect(readSetting({}, 'ALMANAC_REQUEST_TIMEOUT_MS')).toBe(2500);
    expect(readSetting({ ALMANAC_REQUEST_TIMEOUT_MS: ' 900 ' }, 'ALMANAC_REQUEST_TIMEOUT_MS')).toBe(900);
    expect(readSetting({ ALMANAC_REQUEST_TIMEOUT_MS: '' }, 'ALMANAC_REQUEST_TIMEOUT_MS')).toBe(2500);
  });

  it('names the variable and its bounds when a value is bad', () => {
    expect(() => readSetting({ ALMANAC_REQUEST_TIMEOUT_MS: '10' }, 'ALMANAC_REQUEST_TIMEOUT_MS')).toThrow(
      new ConfigError('ALMANAC_REQUEST_TIMEOUT_MS must be an integer from 100 to 600000 ms (got "10")'),
    );
    expect(() => readSetting({ ALMANAC_LOG_LEVEL: 'loud' }, 'ALMANAC_LOG_LEVEL')).toThrow('ALMANAC_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent (got "loud")');
  });

  it('refuses a worker shutdown deadline given in seconds, naming the unit', () => {
    expect(readSetting({ ALMANAC_WORKER_SHUTDOWN_MS: '25000' }, 'ALMANAC_WORKER_SHUTDOWN_MS')).toBe(25_000);
    for (const v of ['25', '0']) {
      expect(() => readSetting({ ALMANAC_WORKER_SHUTDOWN_MS: v }, 'ALMANAC_WORKER_SHUTDOWN_MS')).toThrow(
        new ConfigError(`ALMANAC_WORKER_SHUTDOWN_MS must be an integer from 1000 to 3600000 ms (got "${v}")`),
      );
    }
  });

  it('reads a setting without a default as undefined when unset', () => {
    expect(readSetting({}, 'ALMANAC_ADMIN_PORT')).toBeUndefined();
    expect(readSetting({ ALMANAC_ADMIN_PORT: '3001' }, 'ALMANAC_ADMIN_PORT')).toBe(3001);
    expect(readSetting({}, 'ALMANAC_SMTP_URL')).toBeUndefined();
  });

  it('refuses at boot an SMTP URL nodemailer cannot connect with, naming the variable', () => {
    const smtp = (v: string) => readSetting({ ALMANAC_SMTP_URL: v }, 'ALMANAC_SMTP_URL');
    for (const ok of ['smtp://mail.example.com', 'smtps://u%40x:p%3Ass@mail.example.com:465', 'SMTP://mail.example.com:587/?pool=true', 'smtp:mail.example.com:25', 'smtp://[::1]:2525']) {
      expect(smtp(ok)).toBe(ok);
    }
    // nodemailer sends the first three to localhost:587 and the fourth to 0.0.2.75, refuses the
    // next two at the first job, and takes an http URL for SMTP on port 587.
    for (const bad of ['mail.example.com', 'smtp://', 'direct:', 'mail.example.com:587', 'smtp://mail.example.com:70000', 'smtp://mail example.com', 'http://mail.example.com', 'user:secret@mail.example.com:587']) {
      // Not quoted: the value may carry the SMTP password, and boot errors go to the log.
      expect(() => smtp(bad)).toThrow(new ConfigError('ALMANAC_SMTP_URL must be smtp:// or smtps:// and a host (smtp://user:pass@host:port) (the value is not shown: it may hold a password)'));
    }
  });

  it('takes a default or bound the reader computes from other settings', () => {
    expect(readSetting({}, 'ALMANAC_WORKER_DEFAULT_THROUGHPUT', { default: 50 })).toBe(50);
    expect(() => readSetting({ ALMANAC_RETRY_MAX_MS: '10' }, 'ALMANAC_RETRY_MAX_MS', { min: 1000 })).toThrow(/ALMANAC_RETRY_MAX_MS must be an integer from 1000/);
  });

  it('accepts the declared words instead of a number', () => {
    expect(readSetting({ ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS: 'forever' }, 'ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS')).toBe('forever');
    expect(() => readSetting({ ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS: 'always' }, 'ALMANAC_KEY_RESERVATION_DEFAULT_SECONDS')).toThrow(ConfigError);
  });

  it('reads lists, flags and URLs as declared', () => {
    expect(readSetting({}, 'ALMANAC_WORKER_POOLS')).toEqual(['default']);
    expect(() => readSetting({ ALMANAC_WORKER_POOLS: 'Bad Pool' }, 'ALMANAC_WORKER_POOLS')).toThrow(/ALMANAC_WORKER_POOLS must be pool names/);
    expect(readSetting({ ALMANAC_CONSOLE_SECURE_COOKIE: 'off' }, 'ALMANAC_CONSOLE_SECURE_COOKIE')).toBe(false);
    expect(() => readSetting({ REDIS_URL: 'http://x' }, 'REDIS_URL')).toThrow('REDIS_URL must start with redis:// or rediss:// (got http://)');
  });
});
