import { ValidationFailedError } from '../../../shared/domain-error.js';
import { commandIdOf, commandSequenceOf, isFinal, parseCommandParams, stateAfter, type CommandType } from './device-command.js';

function fieldsRefused(type: CommandType, params: unknown): string[] {
  try {
    parseCommandParams(type, params);
  } catch (error) {
    if (error instanceof ValidationFailedError) return (error.details.errors ?? []).map((field) => field.field);
    throw error;
  }
  return [];
}

describe('command parameters', () => {
  it('takes what each type takes and nothing else', () => {
    expect(parseCommandParams('reboot', undefined)).toEqual({});
    expect(parseCommandParams('ping', {})).toEqual({});
    expect(parseCommandParams('set-log-level', { level: 'verbose' })).toEqual({ level: 'verbose' });
    expect(parseCommandParams('collect-logs', { sinceSec: 604_800 })).toEqual({ sinceSec: 604_800 });
    expect(parseCommandParams('custom', { name: 'relay.toggle', payload: { relay: 2, on: true } })).toEqual({ name: 'relay.toggle', payload: { relay: 2, on: true } });
    expect(parseCommandParams('custom', { name: 'x' })).toEqual({ name: 'x' });
  });

  it('names every field it refuses', () => {
    expect(fieldsRefused('upload-now', { now: true })).toEqual(['params.now']);
    expect(fieldsRefused('set-log-level', { level: 'WARN', extra: 1 })).toEqual(['params.extra', 'params.level']);
    expect(fieldsRefused('collect-logs', { sinceSec: 604_801 })).toEqual(['params.sinceSec']);
    expect(fieldsRefused('collect-logs', { sinceSec: '60' })).toEqual(['params.sinceSec']);
    expect(fieldsRefused('custom', { name: 'a'.repeat(65) })).toEqual(['params.name']);
    expect(fieldsRefused('custom', { payload: 1 })).toEqual(['params.name']);
    expect(fieldsRefused('ping', 'now')).toEqual(['params']);
  });

  it('measures a custom payload in bytes of JSON, not characters', () => {
    expect(fieldsRefused('custom', { name: 'n', payload: 'x'.repeat(1022) })).toEqual([]);
    expect(fieldsRefused('custom', { name: 'n', payload: 'x'.repeat(1023) })).toEqual(['params.payload']);
    expect(fieldsRefused('custom', { name: 'n', payload: 'é'.repeat(600) })).toEqual(['params.payload']);
  });
});

describe('command ids and states', () => {
  it('reads back only the ids it writes', () => {
    expect(commandSequenceOf(commandIdOf('42'))).toBe('42');
    for (const text of ['cmd_0', 'cmd_042', 'cmd_', 'evt_1', 'cmd_1 ', 'cmd_9223372036854775808']) expect(commandSequenceOf(text)).toBeNull();
    expect(commandSequenceOf('cmd_9223372036854775807')).toBe('9223372036854775807');
  });

  it('ends a command on a final result only', () => {
    expect(stateAfter('accepted')).toBeNull();
    expect(stateAfter('rejected')).toBe('rejected');
    expect(isFinal('delivered')).toBe(false);
    expect(isFinal('expired')).toBe(true);
  });
});
