import { createTestApp, type TestApp } from '../support/create-test-app.js';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('registers a device', async () => {
    const { data, response } = await t.api.POST('/api/v1/device/register', {
      body: { deviceId: 'gw-1', hardwareId: 'hw-1', firmwareVersion: '0.1.4', claimCode: 'ABCD-EFGH' },
    });
    expect(response.status).toBe(201);
    expect(data?.deviceId).toBe('gw-1');
    const rows = await t.db.query('SELECT device_id FROM devices');
    expect(rows.rows).toEqual([{ device_id: 'gw-1' }]);
  });
});
