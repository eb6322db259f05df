import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { EnergyPoint, Point } from './api';
import { formatValue, h, type Metric } from './dom';

interface Bucket {
  startMs: number;
  avg: number;
  min: number;
  max: number;
  count: number;
}

/** Buckets further apart than this many widths are a gap in the data: the line breaks there. */
const GAP_BUCKETS = 3;

/** One metric over time: the min–max band of each bucket and the average line. */
export class MetricChart {
  readonly element: HTMLElement;
  private plot: uPlot | undefined;
  private buckets: Bucket[] = [];
  private bucketMs = 60_000;
  private fromMs = 0;
  private toMs = 0;

  constructor(readonly metric: Metric) {
    this.element = h('figure', { class: 'chart', 'data-metric': metric.name }, h('figcaption', {}, `${metric.label} (${metric.unit})`));
    new ResizeObserver(() => this.plot?.setSize(this.size())).observe(this.element);
  }

  show(points: Point[], bucketSec: number, from: Date, to: Date): void {
    this.buckets = points.map((point) => ({ startMs: Date.parse(point.ts), avg: point.avg, min: point.min, max: point.max, count: point.count }));
    this.bucketMs = bucketSec * 1000;
    this.fromMs = from.getTime();
    this.toMs = to.getTime();
    this.draw();
  }

  /** A record that arrived live: into its bucket, or a new one. */
  add(atMs: number, value: number): void {
    if (atMs < this.fromMs) return;
    const startMs = Math.floor(atMs / this.bucketMs) * this.bucketMs;
    const index = this.buckets.findIndex((bucket) => bucket.startMs >= startMs);
    const bucket = this.buckets[index];
    if (bucket?.startMs === startMs) {
      bucket.avg = (bucket.avg * bucket.count + value) / (bucket.count + 1);
      bucket.min = Math.min(bucket.min, value);
      bucket.max = Math.max(bucket.max, value);
      bucket.count += 1;
    } else {
      this.buckets.splice(index === -1 ? this.buckets.length : index, 0, { startMs, avg: value, min: value, max: value, count: 1 });
    }
    this.toMs = Math.max(this.toMs, atMs);
    this.draw();
  }

  private draw(): void {
    this.element.dataset.points = String(this.buckets.length);
    this.element.dataset.records = String(this.buckets.reduce((sum, bucket) => sum + bucket.count, 0));
    const data = this.columns();
    if (this.plot) this.plot.setData(data);
    else this.plot = new uPlot(this.options(), data, this.element);
  }

  private columns(): uPlot.AlignedData {
    const times: number[] = [];
    const mins: Array<number | null> = [];
    const maxes: Array<number | null> = [];
    const avgs: Array<number | null> = [];
    this.buckets.forEach((bucket, i) => {
      const previous = this.buckets[i - 1];
      if (previous && bucket.startMs - previous.startMs > GAP_BUCKETS * this.bucketMs) {
        times.push((previous.startMs + this.bucketMs) / 1000);
        mins.push(null);
        maxes.push(null);
        avgs.push(null);
      }
      times.push(bucket.startMs / 1000);
      mins.push(bucket.min);
      maxes.push(bucket.max);
      avgs.push(bucket.avg);
    });
    return [times, mins, maxes, avgs];
  }

  private options(): uPlot.Options {
    const { color } = this.metric;
    const value = (_plot: uPlot, raw: number | null) => formatValue(this.metric, raw);
    return {
      ...this.size(),
      series: [
        {},
        { label: 'min', stroke: `${color}55`, width: 1, value },
        { label: 'max', stroke: `${color}55`, width: 1, value },
        { label: 'avg', stroke: color, width: 2, value },
      ],
      bands: [{ series: [2, 1], fill: `${color}22` }],
      scales: {
        // The whole chosen range, wherever the data is. Not uPlot's min and max: for a single point
        // it makes up a range of its own (1000 days from that point, on a time scale in seconds).
        x: { time: true, range: () => this.xRange() },
      },
      hooks: {
        // The span drawn, for those (and tests) who cannot read the canvas's axis.
        setScale: [
          (plot, key) => {
            if (key !== 'x') return;
            const { min, max } = plot.scales.x;
            if (typeof min !== 'number' || typeof max !== 'number') return;
            this.element.dataset.axisFrom = new Date(min * 1000).toISOString();
            this.element.dataset.axisTo = new Date(max * 1000).toISOString();
          },
        ],
      },
    };
  }

  /** From the start of the range chosen to its end (or the latest record, later), in seconds; buckets begun before it too. */
  private xRange(): uPlot.Range.MinMax {
    const first = this.buckets[0]?.startMs ?? Infinity;
    const last = this.buckets.at(-1)?.startMs ?? -Infinity;
    return [Math.min(this.fromMs, first) / 1000, Math.max(this.toMs, last) / 1000];
  }

  private size(): { width: number; height: number } {
    return { width: Math.max(this.element.clientWidth, 300), height: 200 };
  }
}

/** Ah charged (up) and discharged (down) per day, and equivalent full cycles on the right-hand scale. */
export class EnergyChart {
  readonly element: HTMLElement;
  private plot: uPlot | undefined;

  constructor() {
    this.element = h('figure', { class: 'chart energy-chart' }, h('figcaption', {}, 'Charge per day (Ah)'));
    new ResizeObserver(() => this.plot?.setSize(this.size())).observe(this.element);
  }

  show(points: EnergyPoint[], bucketSec: number): void {
    // Each bar centred on its day.
    const data: uPlot.AlignedData = [
      points.map((point) => Date.parse(point.ts) / 1000 + bucketSec / 2),
      points.map((point) => point.chargedAh),
      points.map((point) => -point.dischargedAh),
      points.map((point) => point.equivalentFullCycles),
    ];
    if (this.plot) this.plot.setData(data);
    else this.plot = new uPlot(this.options(), data, this.element);
  }

  private options(): uPlot.Options {
    const bars = uPlot.paths.bars!({ size: [0.7, 24] });
    const ah = (_plot: uPlot, raw: number | null) => (raw === null ? '–' : `${Math.abs(raw).toFixed(1)} Ah`);
    return {
      ...this.size(),
      series: [
        {},
        { label: 'charged', stroke: '#2e7d32', fill: '#2e7d3299', paths: bars, points: { show: false }, value: ah },
        { label: 'discharged', stroke: '#c62828', fill: '#c6282899', paths: bars, points: { show: false }, value: ah },
        { label: 'full cycles', stroke: '#1565c0', width: 2, scale: 'cycles', value: (_plot, raw) => (raw === null ? '–' : raw.toFixed(2)) },
      ],
      axes: [{}, { values: (_plot, ticks) => ticks.map((tick) => `${Math.abs(tick)}`) }, { scale: 'cycles', side: 1, grid: { show: false } }],
      scales: { cycles: { range: (_plot, _min, max) => [0, Math.max(1, max ?? 0)] } },
    };
  }

  private size(): { width: number; height: number } {
    return { width: Math.max(this.element.clientWidth, 300), height: 200 };
  }
}
