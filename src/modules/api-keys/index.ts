/** The api-keys module's public surface: what other modules and the composition root may import. */
export { ApiKeysModule } from './api-keys.module.js';
export { ApiKeysService } from './application/api-keys.service.js';
import { ApiKeyRecord } from './infrastructure/api-key.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const API_KEYS_RECORDS = [ApiKeyRecord];
