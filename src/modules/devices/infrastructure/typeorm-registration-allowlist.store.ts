import { Injectable } from '@nestjs/common';
import { Orm } from '../../../shared/database/orm.js';
import type { AllowlistEntry } from '../domain/registration-allowlist.js';
import { RegistrationAllowlistStore } from '../domain/registration-allowlist.store.js';
import { RegistrationAllowlistRecord } from './device.record.js';

@Injectable()
export class TypeOrmRegistrationAllowlistStore extends RegistrationAllowlistStore {
  constructor(private readonly orm: Orm) {
    super();
  }

  allows(entry: AllowlistEntry): Promise<boolean> {
    return this.orm.run((manager) => manager.existsBy(RegistrationAllowlistRecord, { deviceId: entry.deviceId, hardwareId: entry.hardwareId }));
  }

  async importEntries(entries: AllowlistEntry[], importedBy: string, now: Date): Promise<number> {
    // One statement for the whole batch (INSERT … ON CONFLICT (device_id) DO UPDATE), which may
    // touch a row only once: a repeated deviceId takes the last hardwareId given.
    const latest = new Map(entries.map((entry) => [entry.deviceId, entry.hardwareId]));
    if (latest.size === 0) return 0;
    const records = [...latest].map(([deviceId, hardwareId]) => ({ deviceId, hardwareId, importedBy, importedAt: now }));
    const result = await this.orm.run((manager) =>
      manager
        .createQueryBuilder()
        .insert()
        .into(RegistrationAllowlistRecord)
        .values(records)
        .orUpdate(['hardware_id', 'imported_by', 'imported_at'], ['device_id'])
        .returning('device_id')
        .updateEntity(false)
        .execute(),
    );
    return (result.raw as unknown[]).length;
  }
}
