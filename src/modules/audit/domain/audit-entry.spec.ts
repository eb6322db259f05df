import { asOwnerSees, type AuditEntry } from './audit-entry.js';

const anEntry = (overrides: Partial<AuditEntry> = {}): AuditEntry => ({
  id: '1',
  at: new Date('2026-11-25T12:00:00.000Z'),
  actor: { kind: 'user', userId: 'user-ada', apiKeyId: 'key-1' },
  action: 'device.renamed',
  deviceId: 'gw-0001',
  target: 'device:gw-0001',
  clientAddress: '203.0.113.7',
  detail: { name: 'Garage' },
  ...overrides,
});

describe('asOwnerSees', () => {
  it('leaves a customer’s entry as it is', () => {
    const entry = anEntry();

    expect(asOwnerSees(entry)).toEqual(entry);
  });

  it('hides an administrator’s account and address, and the previous owner of a transfer', () => {
    const entry = anEntry({
      actor: { kind: 'admin', userId: 'user-support', apiKeyId: null },
      action: 'device.transferred',
      detail: { ownerId: 'user-ada', previousOwnerId: 'user-bob' },
    });

    expect(asOwnerSees(entry)).toEqual({ ...entry, actor: { kind: 'admin', userId: null, apiKeyId: null }, clientAddress: null, detail: { ownerId: 'user-ada' } });
  });
});
