import createClient from 'openapi-fetch';
import type { paths } from '../test/client/schema.js'; // your copy: npx openapi-typescript <url>/docs/openapi.json -o schema.d.ts

export async function socTrend(baseUrl: string, email: string, password: string) {
  const api = createClient<paths>({ baseUrl });
  const login = await api.POST('/api/v1/auth/login', { body: { email, password } });
  if (!login.data) throw new Error(`login failed: ${login.error?.code}`);
  const headers = { authorization: `Bearer ${login.data.accessToken}` };
  const devices = await api.GET('/api/v1/dashboard/devices', { headers });
  const deviceId = devices.data!.items[0].deviceId;
  const { data, error } = await api.GET('/api/v1/dashboard/devices/{deviceId}/telemetry/history', { params: { path: { deviceId }, query: { metrics: 'soc', bucket: 'auto' } }, headers });
  if (error) throw new Error(`${error.code}: ${error.detail}`); // RFC 9457 problem document, typed
  return data.series[0]?.points ?? []; // [{ ts, avg, min, max, count }]
}
