import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { boundaryConfigs, moduleNames } from '../../lint/boundaries.js';

const ROOT = new URL('../..', import.meta.url).pathname;

/** The boundary rules alone, on a planted file: what `npm run lint` reports for it. */
function violations(filename: string, source: string): string[] {
  const linter = new Linter({ cwd: ROOT });
  const config = [{ files: ['**/*.ts'], languageOptions: { parser: tseslint.parser as Linter.Parser } }, ...boundaryConfigs(moduleNames())];
  return linter.verify(source, config, { filename: `${ROOT}${filename}` }).map((message) => `${message.ruleId}: ${message.message.split(':')[0]}`);
}

describe('module boundary lint', () => {
  it('knows the modules from src/modules', () => {
    expect(moduleNames()).toEqual(expect.arrayContaining(['accounts', 'claims', 'dashboard', 'devices', 'ota', 'telemetry']));
  });

  it.each([
    ['src/modules/claims/application/planted.ts', "import { Device } from '../../devices/domain/device.js';"],
    ['src/modules/claims/application/planted.ts', "import { DeviceOwnershipService } from '../../devices/application/device-ownership.service.js';"],
    ['src/modules/dashboard/planted.ts', "import { DeviceRecord } from '../devices/infrastructure/device.record.js';"],
    ['src/modules/ota/http/planted.ts', "export { DeviceIdParam } from '../../devices/http/device-id.param.js';"],
    ['src/auth/planted.ts', "import { DevicesModule } from '../modules/devices/index.js';"],
    ['src/shared/database/planted.ts', "import { DeviceRecord } from '../../modules/devices/infrastructure/device.record.js';"],
    ['src/app-planted.ts', "import { DeviceRegistrationService } from './modules/devices/application/device-registration.service.js';"],
    ['src/metrics/planted.ts', "import { StreamHub } from '../modules/stream/application/stream-hub.js';"],
    ['src/modules/devices/application/planted.ts', "import { InMemoryDeviceRepository } from '../../../../test/fakes/devices/in-memory-device-repository.js';"],
    ['src/modules/devices/planted.ts', "import { aDevice } from '../../../test/support/builders.js';"],
    ['src/shared/auth-tokens/planted.ts', "import { InMemoryRefreshTokenStore } from '../../../test/fakes/shared/in-memory-refresh-token-store.js';"],
    ['src/app-planted.ts', "import { InMemoryDeviceRepository } from '../test/fakes/devices/in-memory-device-repository.js';"],
    ['test/fakes/claims/planted.ts', "import { Device } from '../../../src/modules/devices/domain/device.js';"],
    ['test/fakes/shared/planted.ts', "import { DeviceOwnershipService } from '../../../src/modules/devices/index.js';"],
    ['src/modules/audit/infrastructure/planted.ts', "import { DEVICE_OWNERS } from '../../devices/infrastructure/sql-api.js';"],
    ['src/modules/audit/application/planted.ts', "import { SqlAuditLog } from '../infrastructure/sql-audit-log.js';"],
    ['src/modules/sharing/domain/planted.ts', "import { DeviceShareRecord } from '../infrastructure/device-share.record.js';"],
  ])('refuses %s: %s', (filename, source) => {
    expect(violations(filename, source)).toEqual([expect.stringMatching(/^no-restricted-imports: /)]);
  });

  it.each([
    ['src/modules/claims/application/planted.ts', "import { DeviceOwnershipService } from '../../devices/index.js';"],
    ['src/modules/audit/infrastructure/planted.ts', "import { DEVICE_OWNERS } from '../../devices/sql-api.js';"],
    ['src/modules/audit/infrastructure/planted.ts', "import { AuditEntryRecord } from './audit-log.record.js';"],
    ['src/modules/audit/planted.module.ts', "import { SqlAuditLog } from './infrastructure/sql-audit-log.js';"],
    ['src/modules/claims/application/planted.ts', "import { ClaimAuditStore } from '../domain/claim-audit.store.js';"],
    ['src/modules/claims/application/planted.ts', "import { Sql } from '../../../shared/database/sql.js';"],
    ['src/modules/claims/application/planted.spec.ts', "import { InMemoryDeviceRepository } from '../../../../test/fakes/devices/in-memory-device-repository.js';"],
    ['test/fakes/claims/planted.ts', "import { ClaimAuditStore } from '../../../src/modules/claims/domain/claim-audit.store.js';"],
    ['test/fakes/claims/planted.ts', "import { DeviceOwnershipService } from '../../../src/modules/devices/index.js';"],
    ['test/fakes/claims/planted.ts', "import { InMemoryDeviceRepository } from '../devices/in-memory-device-repository.js';"],
    ['src/app-planted.ts', "import { DevicesModule } from './modules/devices/index.js';"],
    ['src/metrics/planted.ts', "import { StreamsService } from '../modules/stream/index.js';"],
    ['src/auth/planted.ts', "import { Env } from '../config/env.js';"],
  ])('allows %s: %s', (filename, source) => {
    expect(violations(filename, source)).toEqual([]);
  });
});
