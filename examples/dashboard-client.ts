import { createDeviceCloudClient, signIn, unwrap } from '@device-cloud/client';

export async function socTrend(baseUrl: string, email: string, password: string) {
  const api = createDeviceCloudClient({ baseUrl });
  await signIn(api, email, password); // every call below sends the session's token, refreshed when it expires
  const devices = await unwrap(api.GET('/api/v1/dashboard/devices')); // throws a DeviceCloudProblem (status, code, detail, requestId) on an error answer
  const { deviceId } = devices.items[0];
  const history = await unwrap(api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query: { metrics: 'soc', bucket: 'auto' } } }));
  return history.series[0]?.points ?? []; // [{ ts, avg, min, max, count }]
}
