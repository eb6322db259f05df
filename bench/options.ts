export type ScenarioId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5' | 'S6' | 'S7' | 'S8' | 'S9' | 'S10' | 'S11';
export type Profile = 'quick' | 'default' | 'full';

export interface BenchOptions {
  profile: Profile;
  devices: number;
  days: number;
  rounds: number;
  warmupSec: number;
  durationSec: number;
  scenarios: ScenarioId[];
  /** Drop the seeded database and seed again even when a matching one exists. */
  reseed: boolean;
  /** Seed (or check the existing seed), then stop: no load. */
  seedOnly: boolean;
  /** Soak: mixed traffic against the service alone for this many seconds, instead of the scenarios. */
  soakSec?: number;
  /** Only the floor under S3 (bench/floor.ts): no database, no service. */
  floor: boolean;
  /** Fleet: this many distinct gateways through the service alone, twice, for its memory per gateway (bench/fleet.ts). */
  fleetGateways?: number;
  /** Downloads: this many gateways downloading a service-hosted image at once, uploads beside (bench/downloads.ts). */
  downloadGateways?: number;
}

const ALL_SCENARIOS: ScenarioId[] = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'S9', 'S10', 'S11'];

export const USAGE = `npm run bench -- [options]

  --quick            smoke run: 10 devices x 1 day, 1 round, 2 s warm-up, 5 s measured
  --full             1,000 devices x 30 days (259 M records; needs ~70 GB of disk and hours to seed)
  --scenarios LIST   comma-separated, from S1,S2,S3,S4,S5,S6,S7,S8,S9,S10,S11 (default: all); S8
                     brings S4 along (its target is S4's poll rate, in the same run)
  --rounds N         rounds of baseline + service per scenario (default 3; --quick: 1); S1 and S2
                     also run against the service with ALERTS_ENABLED=false and with
                     BATTERY_ANALYTICS_ENABLED=false in each round; S6 runs
                     the service alone, with 1,000 stream subscribers and with none, each round;
                     S9 likewise, with 1,000 command long polls held and with none; S11
                     the service alone (the baseline has no device list)
  --warmup SEC       warm-up per run (default 10)
  --duration SEC     measured time per run (default 20)
  --devices N        override the number of seeded devices
  --days N           override the days of seeded history
  --reseed           seed again even when a matching seeded database exists
  --seed-only        seed (or reuse) the data, print its figures, and stop
  --soak DURATION    soak instead of the scenarios: mixed traffic against the service alone for
                     e.g. 90s, 10m or 1h, figures per minute (per tenth when shorter than 10 min)
  --fleet [N]        instead of the scenarios: N distinct gateways (default 100,000; --quick 10,000)
                     each register, log in, poll config and OTA and upload once through the
                     service alone, then again; RSS per gateway and its bounds (bench/fleet.ts)
  --downloads [N]    instead of the scenarios: N gateways (default 200) download a 4 MiB image the
                     service keeps, half cut and resumed by Range, uploads beside (bench/downloads.ts)
  --floor            S3's answers from a bare node:http server (JSON and socket only, no database):
                     what building and sending them costs on this machine (uses --warmup, --duration)
`;

function positiveInt(name: string, raw: string | undefined): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} needs a positive integer, got ${raw ?? 'nothing'}`);
  return value;
}

/** "90s", "10m", "1.5h" → seconds. */
export function parseDuration(name: string, raw: string | undefined): number {
  const match = /^(\d+(?:\.\d+)?)(s|m|h)$/.exec(raw ?? '');
  if (!match) throw new Error(`${name} needs a duration such as 90s, 10m or 1h, got ${raw ?? 'nothing'}`);
  return Math.round(Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2] as 's' | 'm' | 'h']);
}

export function parseOptions(argv: string[]): BenchOptions {
  const flags = new Set(argv.filter((arg) => arg.startsWith('--')));
  const valueOf = (name: string): string | undefined => {
    const index = argv.indexOf(name);
    return index >= 0 ? argv[index + 1] : undefined;
  };
  const known = new Set(['--quick', '--full', '--scenarios', '--rounds', '--warmup', '--duration', '--devices', '--days', '--reseed', '--seed-only', '--soak', '--floor', '--fleet', '--downloads', '--help']);
  for (const flag of flags) if (!known.has(flag)) throw new Error(`Unknown option ${flag}\n\n${USAGE}`);
  if (flags.has('--quick') && flags.has('--full')) throw new Error('--quick and --full exclude each other');
  const soakSec = flags.has('--soak') ? parseDuration('--soak', valueOf('--soak')) : undefined;
  if (soakSec !== undefined) {
    for (const flag of ['--scenarios', '--rounds', '--warmup', '--duration', '--seed-only']) {
      if (flags.has(flag)) throw new Error(`--soak runs its own traffic mix for its own duration: drop ${flag}`);
    }
    if (soakSec < 30 || soakSec > 86_400) throw new Error('--soak must last from 30s to 24h');
  }

  const profile: Profile = flags.has('--quick') ? 'quick' : flags.has('--full') ? 'full' : 'default';
  let fleetGateways: number | undefined;
  if (flags.has('--fleet')) {
    if (soakSec !== undefined || flags.has('--floor') || flags.has('--scenarios')) throw new Error('--fleet runs alone: drop --soak, --floor and --scenarios');
    const raw = valueOf('--fleet');
    fleetGateways = raw && !raw.startsWith('--') ? positiveInt('--fleet', raw) : profile === 'quick' ? 10_000 : 100_000;
  }
  let downloadGateways: number | undefined;
  if (flags.has('--downloads')) {
    if (soakSec !== undefined || flags.has('--floor') || flags.has('--scenarios') || flags.has('--fleet')) throw new Error('--downloads runs alone: drop --soak, --floor, --fleet and --scenarios');
    const raw = valueOf('--downloads');
    downloadGateways = raw && !raw.startsWith('--') ? positiveInt('--downloads', raw) : 200;
  }
  const base =
    profile === 'quick'
      ? { devices: 10, days: 1, rounds: 1, warmupSec: 2, durationSec: 5 }
      : profile === 'full'
        ? { devices: 1000, days: 30, rounds: 3, warmupSec: 10, durationSec: 20 }
        : { devices: 100, days: 30, rounds: 3, warmupSec: 10, durationSec: 20 };

  let scenarios = ALL_SCENARIOS;
  const list = valueOf('--scenarios');
  if (flags.has('--scenarios')) {
    const requested = (list ?? '').split(',').map((item) => item.trim().toUpperCase()).filter(Boolean);
    for (const item of requested) {
      if (!ALL_SCENARIOS.includes(item as ScenarioId)) throw new Error(`Unknown scenario ${item}; choose from ${ALL_SCENARIOS.join(', ')}`);
    }
    if (requested.length === 0) throw new Error('--scenarios needs a list, e.g. S1,S3');
    scenarios = [...new Set(requested as ScenarioId[])];
  }
  // S8's target is S4's poll rate measured in the same run.
  if (scenarios.includes('S8') && !scenarios.includes('S4')) scenarios = scenarios.flatMap((scenario) => (scenario === 'S8' ? ['S4', 'S8'] : [scenario]));

  return {
    profile,
    devices: flags.has('--devices') ? positiveInt('--devices', valueOf('--devices')) : base.devices,
    days: flags.has('--days') ? positiveInt('--days', valueOf('--days')) : base.days,
    rounds: flags.has('--rounds') ? positiveInt('--rounds', valueOf('--rounds')) : base.rounds,
    warmupSec: flags.has('--warmup') ? positiveInt('--warmup', valueOf('--warmup')) : base.warmupSec,
    durationSec: flags.has('--duration') ? positiveInt('--duration', valueOf('--duration')) : base.durationSec,
    scenarios,
    reseed: flags.has('--reseed'),
    seedOnly: flags.has('--seed-only'),
    soakSec,
    floor: flags.has('--floor'),
    fleetGateways,
    downloadGateways,
  };
}
