import { passwordOfUrl, redactUrl } from './database-config';

describe('a database URL in logs', () => {
  it('hides the password in user:password@ and in every secret query parameter (pg honours ?password=)', () => {
    expect(redactUrl('postgres://u:hunter2@db:5432/a')).toBe('postgres://u:***@db:5432/a');
    const redacted = redactUrl('postgres://almanac@db/almanac?password=S3cr3t&sslpassword=K3y&sslkey=/k.pem&sslmode=require&application_name=api');
    expect(redacted).not.toMatch(/S3cr3t|K3y|k\.pem/);
    expect(redacted).toBe('postgres://almanac@db/almanac?password=***&sslpassword=***&sslkey=***&sslmode=require&application_name=api');
    expect(redactUrl('redis://r:6379?Password=S3cr3t')).not.toContain('S3cr3t');
    expect(redactUrl('not a url')).toBe('(unparsable url)');
  });

  it('reads the password a client uses: ?password= before user:password@', () => {
    expect(passwordOfUrl('postgres://u:a@db/x')).toBe('a');
    expect(passwordOfUrl('postgres://u:a%40b@db/x')).toBe('a@b');
    expect(passwordOfUrl('postgres://u@db/x?password=q')).toBe('q');
    expect(passwordOfUrl('postgres://u:a@db/x?password=q')).toBe('q');
    expect(passwordOfUrl('postgres://u@db/x')).toBeUndefined();
    expect(passwordOfUrl(undefined)).toBeUndefined();
  });
});
