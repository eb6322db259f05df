/** The dashboard module's public surface: what the composition root may import. */
export { DashboardModule } from './dashboard.module.js';
