import { DataSource } from 'typeorm';
import { serviceDataSourceOptions } from './src/schema.js';

/** The DataSource the typeorm CLI uses (npm run migration:generate|run|revert). Needs DATABASE_URL. */
const url = process.env.DATABASE_URL;
if (!url) throw new Error('Set DATABASE_URL to run the typeorm CLI, e.g. postgres://postgres@127.0.0.1:5432/device_cloud');

export default new DataSource(serviceDataSourceOptions({ url, poolSize: 2 }));
