import fc from 'fast-check';
import type { OtaChannel } from '../../../shared/kernel/ota-channel.js';
import { FirmwareVersion } from '../../../shared/kernel/firmware-version.js';
import { aFirmwareRelease, PUBLISHED_AT } from '../../../../test/fakes/ota/a-firmware-release.js';
import { belowCrashFreeTarget, crashFreePercent, exceedsFailureBudget, inRollout, inTarget, selectRelease, type FirmwareRelease, type OtaTarget } from './firmware-release.js';

const aRelease = aFirmwareRelease;

/** Releases published at PUBLISHED_AT, asked about at that instant unless said otherwise. */
const select = (releases: readonly FirmwareRelease[], target: OtaTarget, now = PUBLISHED_AT) => selectRelease(releases, target, now);

function aTarget(overrides: Partial<Omit<OtaTarget, 'firmwareVersion'>> & { firmwareVersion?: string } = {}): OtaTarget {
  return {
    deviceId: overrides.deviceId ?? 'gw-0001',
    hardwareId: overrides.hardwareId ?? 'hw-a',
    firmwareVersion: FirmwareVersion.parse(overrides.firmwareVersion ?? '0.1.9'),
    channel: overrides.channel ?? 'stable',
    minSoc: 40,
    temperatureRange: { min: 0, max: 45 },
    tags: overrides.tags ?? [],
  };
}

const RELEASE_ID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const deviceIds = Array.from({ length: 10_000 }, (_, i) => `gw-${i.toString(16).padStart(6, '0')}`);

describe('inRollout', () => {
  const deviceId = fc.stringMatching(/^[A-Za-z0-9_.:-]{1,64}$/);
  const releaseId = fc.uuid();

  it('0 % includes nobody and 100 % everybody', () => {
    fc.assert(
      fc.property(deviceId, releaseId, (device, release) => {
        expect(inRollout(device, release, 0)).toBe(false);
        expect(inRollout(device, release, 100)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('is monotonic in the percent: a device in at p stays in at every higher percent', () => {
    fc.assert(
      fc.property(deviceId, releaseId, fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (device, release, a, b) => {
        const [low, high] = a <= b ? [a, b] : [b, a];
        if (inRollout(device, release, low)) expect(inRollout(device, release, high)).toBe(true);
        if (!inRollout(device, release, high)) expect(inRollout(device, release, low)).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('is a pure function of (deviceId, releaseId, percent)', () => {
    fc.assert(
      fc.property(deviceId, releaseId, fc.integer({ min: 0, max: 100 }), (device, release, percent) => {
        expect(inRollout(device, release, percent)).toBe(inRollout(device, release, percent));
      }),
    );
  });

  it.each([1, 10, 30, 50, 90])('includes about %i % of 10 000 devices', (percent) => {
    const included = deviceIds.filter((id) => inRollout(id, RELEASE_ID, percent)).length;

    expect(included).toBeGreaterThanOrEqual((percent - 1.5) * 100);
    expect(included).toBeLessThanOrEqual((percent + 1.5) * 100);
  });

  it('picks a different sample for another release (the release id is part of the hash)', () => {
    const first = deviceIds.filter((id) => inRollout(id, RELEASE_ID, 50));
    const second = new Set(deviceIds.filter((id) => inRollout(id, '9b2d7c1e-8f1a-4d7e-b0c4-6a5e2f3d4c1b', 50)));
    const inBoth = first.filter((id) => second.has(id)).length;

    // Independent halves overlap in about a quarter of the fleet, identical ones in half.
    expect(inBoth).toBeGreaterThan(2_000);
    expect(inBoth).toBeLessThan(3_000);
  });
});

describe('selectRelease', () => {
  it('no releases: null', () => {
    expect(select([], aTarget())).toBeNull();
  });

  it('takes the highest version in numeric order: 0.1.10 over 0.1.9 and 0.1.2', () => {
    const releases = [aRelease({ version: '0.1.9' }), aRelease({ version: '0.1.10' }), aRelease({ version: '0.1.2' })];

    expect(select(releases, aTarget({ firmwareVersion: '0.1.1' }))?.version).toBe('0.1.10');
  });

  it.each([
    ['the same version', '0.1.10', '0.1.10'],
    ['the same version written with a trailing zero', '1.2', '1.2.0'],
    ['an older version in numeric order', '0.1.9', '0.1.10'],
    ['an older version', '0.1.3', '1.0'],
  ])('never offers %s (%s to a device on %s)', (_name, version, running) => {
    expect(select([aRelease({ version })], aTarget({ firmwareVersion: running }))).toBeNull();
  });

  it('skips revoked and paused releases and falls back to the highest live one', () => {
    const live = aRelease({ version: '0.3.0' });
    const releases = [aRelease({ version: '0.5.0', revoked: true }), aRelease({ version: '0.4.0', paused: true }), live];

    expect(select(releases, aTarget())).toBe(live);
  });

  it('skips a release for other hardware; one without hardwareId is for every hardware', () => {
    const generic = aRelease({ version: '0.3.0', hardwareId: null });
    const releases = [aRelease({ version: '0.9.0', hardwareId: 'hw-b' }), generic];

    expect(select(releases, aTarget({ hardwareId: 'hw-a' }))).toBe(generic);
    expect(select(releases, aTarget({ hardwareId: 'hw-b' }))?.version).toBe('0.9.0');
  });

  it('at equal versions the release for the device\'s hardware wins over a generic one, in either order', () => {
    const specific = aRelease({ version: '0.3.0', hardwareId: 'hw-a' });
    const generic = aRelease({ version: '0.3.0', hardwareId: null });

    expect(select([generic, specific], aTarget())).toBe(specific);
    expect(select([specific, generic], aTarget())).toBe(specific);
    expect(select([aRelease({ version: '0.3', hardwareId: null }), aRelease({ version: '0.3.0', hardwareId: 'hw-a' })], aTarget())?.hardwareId).toBe('hw-a');
  });

  it('a higher generic release beats a lower one for the device\'s hardware', () => {
    const generic = aRelease({ version: '0.4.0', hardwareId: null });

    expect(select([aRelease({ version: '0.3.0', hardwareId: 'hw-a' }), generic], aTarget())).toBe(generic);
  });

  it('a stable device never gets a beta release; a beta device gets beta and stable, whichever is higher', () => {
    const beta = aRelease({ version: '0.4.0', channel: 'beta' });
    const stable = aRelease({ version: '0.3.0', channel: 'stable' });
    const newerStable = aRelease({ version: '0.5.0', channel: 'stable' });

    expect(select([beta, stable], aTarget({ channel: 'stable' }))).toBe(stable);
    expect(select([beta], aTarget({ channel: 'stable' }))).toBeNull();
    expect(select([beta, stable], aTarget({ channel: 'beta' }))).toBe(beta);
    expect(select([beta, stable, newerStable], aTarget({ channel: 'beta' }))).toBe(newerStable);
  });

  it('minFromVersion: offered from that version on, numerically; below it a lower release without the condition is offered instead', () => {
    const stepping = aRelease({ version: '0.1.20' });
    const gated = aRelease({ version: '0.2.0', minFromVersion: '0.1.10' });

    expect(select([gated, stepping], aTarget({ firmwareVersion: '0.1.9' }))).toBe(stepping);
    expect(select([gated, stepping], aTarget({ firmwareVersion: '0.1.10' }))).toBe(gated);
    expect(select([gated, stepping], aTarget({ firmwareVersion: '0.1.11' }))).toBe(gated);
  });

  it('a release whose rollout leaves the device out is skipped for a lower one that includes it', () => {
    const everyone = aRelease({ version: '0.3.0' });

    expect(select([aRelease({ version: '0.4.0', rolloutPercent: 0 }), everyone], aTarget())).toBe(everyone);
  });

  it('agrees with a filter-then-maximum oracle on random fleets', () => {
    const version = fc.array(fc.integer({ min: 0, max: 12 }), { minLength: 2, maxLength: 3 }).map((parts) => parts.join('.'));
    const channel = fc.constantFrom<OtaChannel>('stable', 'beta');
    const release = fc.record({
      version,
      hardwareId: fc.constantFrom<string | null>(null, 'hw-a', 'hw-b'),
      channel,
      rolloutPercent: fc.constantFrom(0, 25, 50, 100),
      minFromVersion: fc.option(version, { nil: null }),
      paused: fc.boolean(),
      revoked: fc.boolean(),
    });
    const key = (value: string) => [...value.split('.').map(Number), 0, 0, 0].slice(0, 4);
    const compare = (a: string, b: string) => {
      const [x, y] = [key(a), key(b)];
      for (let i = 0; i < 4; i++) if (x[i] !== y[i]) return Math.sign(x[i] - y[i]);
      return 0;
    };

    fc.assert(
      fc.property(fc.array(release, { maxLength: 12 }), version, fc.constantFrom('hw-a', 'hw-b'), channel, fc.string({ minLength: 1, maxLength: 12 }), (specs, running, hardwareId, deviceChannel, deviceId) => {
        const releases = specs.map((spec) => aRelease(spec));
        const target = aTarget({ deviceId, hardwareId, channel: deviceChannel, firmwareVersion: running });
        const eligible = releases.filter(
          (r) =>
            !r.revoked &&
            !r.paused &&
            (r.hardwareId === null || r.hardwareId === hardwareId) &&
            (r.channel === 'stable' || deviceChannel === 'beta') &&
            compare(r.version, running) > 0 &&
            (r.minFromVersion === null || compare(running, r.minFromVersion) >= 0) &&
            inRollout(deviceId, r.id, r.rolloutPercent),
        );
        const chosen = select(releases, target);

        if (eligible.length === 0) {
          expect(chosen).toBeNull();
          return;
        }
        expect(chosen).not.toBeNull();
        expect(eligible).toContain(chosen);
        for (const other of eligible) expect(compare(chosen!.version, other.version)).toBeGreaterThanOrEqual(0);
        if (chosen!.hardwareId === null) {
          expect(eligible.some((other) => other.hardwareId !== null && compare(other.version, chosen!.version) === 0)).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('exceedsFailureBudget', () => {
  const budget = (maxFailurePercent: number | null) => ({ maxFailurePercent });

  it('a release without maxFailurePercent never pauses itself', () => {
    expect(exceedsFailureBudget(budget(null), { installed: 0, failed: 100, rolledBack: 100 })).toBe(false);
  });

  it('fewer than 10 finished devices never pause it, even when all of them failed', () => {
    expect(exceedsFailureBudget(budget(0), { installed: 0, failed: 9, rolledBack: 0 })).toBe(false);
    expect(exceedsFailureBudget(budget(0), { installed: 0, failed: 5, rolledBack: 4 })).toBe(false);
  });

  it('from 10 finished devices on: pauses when the failed share is above the percent, not when it equals it', () => {
    expect(exceedsFailureBudget(budget(20), { installed: 7, failed: 3, rolledBack: 0 })).toBe(true);
    expect(exceedsFailureBudget(budget(20), { installed: 8, failed: 2, rolledBack: 0 })).toBe(false);
    expect(exceedsFailureBudget(budget(20), { installed: 79, failed: 21, rolledBack: 0 })).toBe(true);
    expect(exceedsFailureBudget(budget(20), { installed: 80, failed: 20, rolledBack: 0 })).toBe(false);
  });

  it('rolled back devices count as finished and as failures (the documented budget: "failed or rolled back")', () => {
    expect(exceedsFailureBudget(budget(20), { installed: 7, failed: 0, rolledBack: 3 })).toBe(true);
    expect(exceedsFailureBudget(budget(20), { installed: 8, failed: 1, rolledBack: 1 })).toBe(false);
    expect(exceedsFailureBudget(budget(0), { installed: 9, failed: 0, rolledBack: 1 })).toBe(true);
  });

  it('0 % pauses at the first failure among 10 finished; 100 % never pauses', () => {
    expect(exceedsFailureBudget(budget(0), { installed: 10, failed: 0, rolledBack: 0 })).toBe(false);
    expect(exceedsFailureBudget(budget(0), { installed: 9, failed: 1, rolledBack: 0 })).toBe(true);
    expect(exceedsFailureBudget(budget(100), { installed: 0, failed: 50, rolledBack: 50 })).toBe(false);
  });

  it('is monotonic: more failures never un-pause, a higher budget never pauses what a lower one did not', () => {
    const count = fc.integer({ min: 0, max: 200 });
    fc.assert(
      fc.property(count, count, count, fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (installed, failed, rolledBack, a, b) => {
        const [low, high] = a <= b ? [a, b] : [b, a];
        if (exceedsFailureBudget(budget(low), { installed, failed, rolledBack }) === false) {
          expect(exceedsFailureBudget(budget(high), { installed, failed, rolledBack })).toBe(false);
        }
        if (exceedsFailureBudget(budget(low), { installed, failed, rolledBack })) {
          expect(exceedsFailureBudget(budget(low), { installed, failed: failed + 1, rolledBack })).toBe(true);
        }
      }),
    );
  });
});

describe('the crash-free target', () => {
  const target = (minCrashFreePercent: number | null) => ({ minCrashFreePercent });

  it('never pauses a release without one, or before 10 devices confirmed it', () => {
    expect(belowCrashFreeTarget(target(null), { bootConfirmed: 100, crashed: 100 })).toBe(false);
    expect(belowCrashFreeTarget(target(100), { bootConfirmed: 9, crashed: 9 })).toBe(false);
  });

  it('pauses below the percent, not at it', () => {
    expect(belowCrashFreeTarget(target(90), { bootConfirmed: 10, crashed: 1 })).toBe(false);
    expect(belowCrashFreeTarget(target(90), { bootConfirmed: 10, crashed: 2 })).toBe(true);
    expect(belowCrashFreeTarget(target(0), { bootConfirmed: 10, crashed: 10 })).toBe(false);
  });

  it('gives the crash-free share with one decimal, none before a device confirmed', () => {
    expect(crashFreePercent({ bootConfirmed: 0, crashed: 0 })).toBeNull();
    expect(crashFreePercent({ bootConfirmed: 3, crashed: 1 })).toBe(66.7);
    expect(crashFreePercent({ bootConfirmed: 96, crashed: 0 })).toBe(100);
  });
});

describe('selectRelease: campaigns', () => {
  it('a campaign reaches the devices with any of its tags or among its ids; none reaches every device', () => {
    const byTag = aRelease({ version: '0.3.0', targetTags: ['pilot', 'site-1'] });
    const byId = aRelease({ version: '0.3.0', targetDeviceIds: ['gw-0007'] });
    const both = aRelease({ version: '0.3.0', targetTags: ['pilot'], targetDeviceIds: ['gw-0008'] });
    expect(select([byTag], aTarget({ tags: ['site-1'] }))).toBe(byTag);
    expect(select([byTag], aTarget({ tags: ['other'] }))).toBeNull();
    expect(select([byId], aTarget({ deviceId: 'gw-0007' }))).toBe(byId);
    expect(select([byId], aTarget({ deviceId: 'gw-0009', tags: ['pilot'] }))).toBeNull();
    expect(select([both], aTarget({ deviceId: 'gw-0008' }))).toBe(both);
    expect(select([both], aTarget({ deviceId: 'gw-0001', tags: ['pilot'] }))).toBe(both);
    expect(inTarget(aRelease(), aTarget())).toBe(true);
  });

  it('a release starting later is offered from its start on', () => {
    const later = aRelease({ version: '0.3.0', startsAt: new Date(PUBLISHED_AT.getTime() + 60_000) });
    expect(select([later], aTarget())).toBeNull();
    expect(select([later], aTarget(), new Date(PUBLISHED_AT.getTime() + 60_000))).toBe(later);
  });

  it('a revoked release with a way back offers it to the devices that run it, unless something newer is there', () => {
    const back = aRelease({ version: '0.2.0' });
    const revoked = aRelease({ version: '0.3.0', revoked: true, rollbackTo: back.id });
    expect(select([back, revoked], aTarget({ firmwareVersion: '0.3.0' }))).toBe(back);
    // Not for a device on another version, another hardware, or outside the revoked release's campaign.
    expect(select([back, revoked], aTarget({ firmwareVersion: '0.3.1' }))).toBeNull();
    expect(select([back, { ...revoked, hardwareId: 'hw-b' }], aTarget({ firmwareVersion: '0.3.0' }))).toBeNull();
    expect(select([back, { ...revoked, targetTags: ['pilot'] }], aTarget({ firmwareVersion: '0.3.0' }))).toBeNull();
    // Nor when the way back is not live any more; and a fixed, newer release wins over going back.
    expect(select([{ ...back, paused: true }, revoked], aTarget({ firmwareVersion: '0.3.0' }))).toBeNull();
    const fixed = aRelease({ version: '0.3.1' });
    expect(select([back, revoked, fixed], aTarget({ firmwareVersion: '0.3.0' }))).toBe(fixed);
  });
});
