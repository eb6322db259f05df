/** A battery's value of the ranked metric, with what groups it with its peers. */
export interface BatteryFigure {
  deviceId: string;
  batteryId: string;
  chemistry: string;
  capacityAh: number;
  value: number;
}

export interface RankedBattery extends BatteryFigure {
  /** The median of the batteries of the same chemistry and capacity (this one included). */
  fleetMedian: number;
  /** value − fleetMedian: above the median is worse for every ranked metric. */
  deviation: number;
  /** deviation ÷ (1.4826 × median absolute deviation): how unusual, robustly; null when the group does not vary. */
  robustZ: number | null;
  /** Batteries in the group. */
  groupSize: number;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/**
 * Batteries grouped by chemistry and capacity, each measured against its group's median; ranked
 * by deviation, largest first (then device and battery id, so equal ones keep one order).
 */
export function rankOutliers(figures: readonly BatteryFigure[]): RankedBattery[] {
  const groups = new Map<string, BatteryFigure[]>();
  for (const figure of figures) {
    const key = `${figure.chemistry}\u0000${figure.capacityAh}`;
    groups.set(key, [...(groups.get(key) ?? []), figure]);
  }
  const ranked: RankedBattery[] = [];
  for (const group of groups.values()) {
    const middle = median(group.map((figure) => figure.value));
    const spread = 1.4826 * median(group.map((figure) => Math.abs(figure.value - middle)));
    for (const figure of group) {
      const deviation = figure.value - middle;
      ranked.push({ ...figure, fleetMedian: middle, deviation, robustZ: spread > 0 ? deviation / spread : null, groupSize: group.length });
    }
  }
  return ranked.sort((a, b) => b.deviation - a.deviation || a.deviceId.localeCompare(b.deviceId) || a.batteryId.localeCompare(b.batteryId));
}
