/** The stream module's public surface: what other modules and the composition root may import. */
export { StreamModule } from './stream.module.js';
export { StreamsService } from './application/streams.service.js';
import { StreamTicketRecord } from './infrastructure/stream-ticket.record.js';

/** The tables this module owns, for the data source (src/schema.ts). */
export const STREAM_RECORDS = [StreamTicketRecord];
