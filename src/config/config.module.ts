import { Global, Module, type DynamicModule } from '@nestjs/common';
import { Env } from './env.js';
import { SecretHasher, type Argon2Cost } from '../shared/crypto/secret-hasher.js';
import { Secrets } from './secrets.js';
import { MemoryCaches } from '../shared/memory/memory-caches.js';

/** Clock as a dependency, so rules that depend on time are testable without waiting. */
export abstract class Clock {
  abstract now(): Date;
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}

@Global()
@Module({})
export class ConfigModule {
  static register(env: Env, secrets: Secrets, clock: Clock = new SystemClock(), passwordHashCost?: Argon2Cost): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: Env, useValue: env },
        { provide: Secrets, useValue: secrets },
        { provide: SecretHasher, useValue: new SecretHasher(secrets.pepper, passwordHashCost) },
        { provide: Clock, useValue: clock },
        { provide: MemoryCaches, useValue: new MemoryCaches(env) },
      ],
      exports: [Env, Secrets, SecretHasher, Clock, MemoryCaches],
    };
  }
}
