/**
 * The well-known metrics that carry charge (docs/api.md, well-known metrics): the batteries module
 * integrates the records holding any of them, between neighbours at most CHARGE_SEGMENT_MINUTES
 * apart, and the ingest statement (telemetry module) marks, with the records, the hours they can
 * change. Shared by both, so the two cannot disagree.
 */
export const CHARGE_METRICS = ['current', 'chargedAhTotal', 'dischargedAhTotal'] as const;
export const CHARGE_SEGMENT_MINUTES = 15;
