import { ConfigError, envBool, envInt, envList, envNumber, envString, envUrl } from './env';

describe('env readers', () => {
  describe('envNumber', () => {
    it('reads decimals within the range and names the variable otherwise', () => {
      expect(envNumber({}, 'N', 7)).toBe(7);
      expect(envNumber({ N: '0.25' }, 'N', 7, { min: 0.001 })).toBe(0.25);
      expect(envNumber({ N: '1e3' }, 'N', 7)).toBe(1000);
      expect(() => envNumber({ N: '0' }, 'N', 7, { min: 0.001, max: 10 })).toThrow('N must be a number from 0.001 to 10 (got "0")');
      expect(() => envNumber({ N: 'fast' }, 'N', 7)).toThrow('N must be a number (got "fast")');
    });
  });

  describe('envInt', () => {
    it('uses the default when unset or blank', () => {
      expect(envInt({}, 'N', 7)).toBe(7);
      expect(envInt({ N: '  ' }, 'N', 7)).toBe(7);
    });

    it('reads integers within range, edges included', () => {
      expect(envInt({ N: '1' }, 'N', 7, { min: 1, max: 10 })).toBe(1);
      expect(envInt({ N: '10' }, 'N', 7, { min: 1, max: 10 })).toBe(10);
      expect(envInt({ N: ' 5 ' }, 'N', 7)).toBe(5);
    });

    it.each(['abc', '1.5', '1e3', '0x10', '12abc'])('rejects %p naming the variable', (v) => {
      expect(() => envInt({ PORT: v }, 'PORT', 3000, { min: 1, max: 65535 })).toThrow(
        new ConfigError(`PORT must be an integer from 1 to 65535 (got "${v}")`),
      );
    });

    it('rejects values outside the range', () => {
      expect(() => envInt({ N: '0' }, 'N', 7, { min: 1, max: 10 })).toThrow('N must be an integer from 1 to 10 (got "0")');
      expect(() => envInt({ N: '11' }, 'N', 7, { min: 1, max: 10 })).toThrow(ConfigError);
      expect(() => envInt({ N: '-1' }, 'N', 7, { min: 0 })).toThrow('N must be an integer >= 0 (got "-1")');
      expect(() => envInt({ N: '99999999999999999999' }, 'N', 7)).toThrow(ConfigError);
    });
  });

  describe('envString', () => {
    it('checks a closed set', () => {
      expect(envString({ L: 'debug' }, 'L', 'info', { oneOf: ['info', 'debug'] })).toBe('debug');
      expect(() => envString({ L: 'loud' }, 'L', 'info', { oneOf: ['info', 'debug'] })).toThrow(
        'L must be one of info, debug (got "loud")',
      );
    });

    it('checks a pattern with a readable description', () => {
      expect(() => envString({ P: 'a:b' }, 'P', 'x', { pattern: /^\w+$/, describe: 'a word' })).toThrow(
        'P must be a word (got "a:b")',
      );
    });

    it('may have no default', () => {
      expect(envString({}, 'S', undefined)).toBeUndefined();
    });
  });

  describe('envList', () => {
    it('splits on commas and drops blanks', () => {
      expect(envList({ L: ' a, b ,,c ' }, 'L', [])).toEqual(['a', 'b', 'c']);
      expect(envList({}, 'L', ['x'])).toEqual(['x']);
    });

    it('checks every item', () => {
      expect(() => envList({ L: 'ok,not ok' }, 'L', [], { pattern: /^\w+$/, describe: 'words' })).toThrow(
        'L must be words (got "not ok")',
      );
    });
  });

  describe('envBool', () => {
    it.each([['true', true], ['1', true], ['YES', true], ['off', false], ['0', false], ['false', false]])(
      '%p is %p', (v, expected) => expect(envBool({ B: v }, 'B', !expected)).toBe(expected),
    );

    it('rejects anything else', () => {
      expect(() => envBool({ B: 'maybe' }, 'B', false)).toThrow('B must be true or false (got "maybe")');
    });
  });

  describe('envUrl', () => {
    it('accepts the listed schemes', () => {
      expect(envUrl({ U: 'rediss://h:6380' }, 'U', 'redis://d', ['redis:', 'rediss:'])).toBe('rediss://h:6380');
      expect(envUrl({}, 'U', 'redis://d:1', ['redis:'])).toBe('redis://d:1');
    });

    it('rejects other schemes and non-URLs without echoing the value (it may hold a password)', () => {
      expect(() => envUrl({ U: 'http://u:secret@h' }, 'U', 'redis://d', ['redis:', 'rediss:'])).toThrow(
        'U must start with redis:// or rediss:// (got http://)',
      );
      let message = '';
      try {
        envUrl({ U: 'not a url secret' }, 'U', 'redis://d', ['redis:']);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/^U is not a URL/);
      expect(message).not.toContain('secret');
    });
  });
});
