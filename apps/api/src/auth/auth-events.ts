import { ALMANAC_CONFIG, type AlmanacConfig, duplicateRedis, REDIS, type RedisClient, within } from '@almanac/platform';
import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectPinoLogger, PinoLogger } from 'nestjs-pino';
import { LAST_USED_EVERY_MS, TenantAuthService } from './tenant-auth.service';

/** Redis answers a publish or a subscribe within this, or the change waits for the cache TTL. */
const REDIS_WAIT_MS = 2000;

/**
 * Spreads key revocations and tenant suspensions to every API replica at once, over Redis
 * pub/sub: each replica forgets the key (or the tenant's cached keys) as the message arrives,
 * typically within milliseconds, instead of honouring it until its cache entry expires
 * (ALMANAC_AUTH_CACHE_TTL_MS). If Redis is down, the change still lands within that TTL.
 * Also writes keys' last-use times once a minute.
 */
@Injectable()
export class AuthEvents implements OnModuleInit, OnModuleDestroy {
  @InjectPinoLogger('auth') private readonly log!: PinoLogger;
  private readonly channel: string;
  private subscriber: RedisClient | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(ALMANAC_CONFIG) config: AlmanacConfig,
    private readonly auth: TenantAuthService,
  ) {
    this.channel = `${config.queuePrefix}:almanac:auth`;
  }

  async onModuleInit(): Promise<void> {
    const sub = (this.subscriber = duplicateRedis(this.redis, { commandTimeout: undefined }));
    sub.on('error', () => undefined); // the shared connection's owner reports outages
    sub.on('message', (_channel: string, message: string) => this.apply(message));
    // Queued by ioredis until Redis answers, and renewed by it after a reconnect.
    await within(REDIS_WAIT_MS, sub.subscribe(this.channel), 'subscribe to auth events').catch((err: unknown) =>
      this.log.warn({ err }, 'auth events not subscribed yet; revocations reach this replica within the key cache TTL until they are'),
    );
    this.timer = setInterval(() => void this.flush(), LAST_USED_EVERY_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    this.subscriber?.disconnect();
  }

  /** A key was revoked (`keyHash`: its sha256 in base64): this replica forgets it now, the others on the message. */
  keyRevoked(keyHash: string): Promise<void> {
    this.auth.forgetKey(keyHash);
    return this.publish(`key ${keyHash}`);
  }

  /** A tenant was suspended or enabled: every replica reads its keys again. */
  tenantChanged(tenantId: number): Promise<void> {
    this.auth.forgetTenant(tenantId);
    return this.publish(`tenant ${tenantId}`);
  }

  private apply(message: string): void {
    const [what, value] = message.split(' ', 2);
    if (what === 'key' && value) this.auth.forgetKey(value);
    else if (what === 'tenant' && /^[0-9]+$/.test(value ?? '')) this.auth.forgetTenant(Number(value));
  }

  private async publish(message: string): Promise<void> {
    await within(REDIS_WAIT_MS, this.redis.publish(this.channel, message), 'publish auth event').catch((err: unknown) =>
      this.log.warn({ err }, 'could not tell the other API replicas; they follow within the key cache TTL'),
    );
  }

  private async flush(): Promise<void> {
    await this.auth.flushLastUsed().catch((err: unknown) => this.log.warn({ err }, 'could not record keys’ last use; retried next minute'));
  }
}
