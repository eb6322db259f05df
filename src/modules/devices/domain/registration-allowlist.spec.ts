import { ValidationFailedError, type FieldError } from '../../../shared/domain-error.js';
import { parseAllowlistCsv } from './registration-allowlist.js';

/** The field errors of a refused CSV; fails the test when the CSV is accepted. */
function problemsOf(csv: string): FieldError[] {
  try {
    parseAllowlistCsv(csv);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationFailedError);
    return (error as ValidationFailedError).details.errors ?? [];
  }
  throw new Error('the CSV was accepted');
}

const fieldsOf = (csv: string) => problemsOf(csv).map((problem) => problem.field);

describe('parseAllowlistCsv', () => {
  it('reads deviceId,hardwareId pairs after the header', () => {
    expect(parseAllowlistCsv('deviceId,hardwareId\ngw-0001,esp32s3-7c:df:a1:0b:22:c4\ngw-0002,esp32s3-00:11:22:33:44:55')).toEqual([
      { deviceId: 'gw-0001', hardwareId: 'esp32s3-7c:df:a1:0b:22:c4' },
      { deviceId: 'gw-0002', hardwareId: 'esp32s3-00:11:22:33:44:55' },
    ]);
  });

  it.each(['deviceId,hardwareId', 'DEVICEID,HARDWAREID', 'deviceid, hardwareid', '  deviceId , hardwareId  ', '\uFEFFdeviceId,hardwareId'])('accepts the header %j', (header) => {
    expect(parseAllowlistCsv(`${header}\ngw-0001,hw-1`)).toEqual([{ deviceId: 'gw-0001', hardwareId: 'hw-1' }]);
  });

  it('accepts a header alone as an empty list', () => {
    expect(parseAllowlistCsv('deviceId,hardwareId\n')).toEqual([]);
  });

  it.each([
    ['no header', 'gw-0001,hw-1\ngw-0002,hw-2'],
    ['the columns swapped', 'hardwareId,deviceId\ngw-0001,hw-1'],
    ['an empty text', ''],
    ['a header with a third column', 'deviceId,hardwareId,note\ngw-0001,hw-1'],
  ])('requires the header (%s)', (_case, csv) => {
    expect(problemsOf(csv)).toContainEqual({ field: 'csv', message: expect.stringContaining('deviceId,hardwareId') });
  });

  it('ignores blank and whitespace-only lines and trims cells', () => {
    expect(parseAllowlistCsv('deviceId,hardwareId\n\ngw-0001 , hw-1 \n   \n\ngw-0002,hw-2\n\n')).toEqual([
      { deviceId: 'gw-0001', hardwareId: 'hw-1' },
      { deviceId: 'gw-0002', hardwareId: 'hw-2' },
    ]);
  });

  it('accepts CRLF line ends', () => {
    expect(parseAllowlistCsv('deviceId,hardwareId\r\ngw-0001,hw-1\r\ngw-0002,hw-2\r\n')).toEqual([
      { deviceId: 'gw-0001', hardwareId: 'hw-1' },
      { deviceId: 'gw-0002', hardwareId: 'hw-2' },
    ]);
  });

  it('names every bad line by its line number in the file, blank lines counted', () => {
    const csv = ['deviceId,hardwareId', 'gw-0001,hw-1', 'gw 0002,hw-2', '', 'gw-0003', 'gw-0004,hw-4', 'gw-0005,'].join('\r\n');

    const problems = problemsOf(csv);

    expect(problems.map((problem) => problem.field)).toEqual(['csv.line3', 'csv.line5', 'csv.line7']);
    expect(problems[0]?.message).toMatch(/deviceId.*hardwareId/);
  });

  it('reports a missing header and the bad lines together', () => {
    expect(fieldsOf('gw-0001,hw-1\nbad line')).toEqual(['csv', 'csv.line2']);
  });

  it.each([
    ['a third column', 'gw-0001,hw-1,extra'],
    ['a trailing comma', 'gw-0001,hw-1,'],
    ['an empty deviceId', ',hw-1'],
    ['a deviceId with a slash', 'gw/0001,hw-1'],
    ['a deviceId of 65 characters', `${'g'.repeat(65)},hw-1`],
    ['a hardwareId of 129 characters', `gw-0001,${'h'.repeat(129)}`],
  ])('refuses a line with %s', (_case, line) => {
    expect(fieldsOf(`deviceId,hardwareId\ngw-0000,hw-0\n${line}`)).toEqual(['csv.line3']);
  });

  it('accepts a 64-character deviceId and a 128-character hardwareId', () => {
    const deviceId = 'g'.repeat(64);
    const hardwareId = 'h'.repeat(128);

    expect(parseAllowlistCsv(`deviceId,hardwareId\n${deviceId},${hardwareId}`)).toEqual([{ deviceId, hardwareId }]);
  });

  it('names at most 50 bad lines', () => {
    const csv = ['deviceId,hardwareId', ...Array.from({ length: 60 }, (_, i) => `bad/${i},hw`)].join('\n');

    const fields = fieldsOf(csv);

    expect(fields).toHaveLength(50);
    expect(fields[0]).toBe('csv.line2');
    expect(fields[49]).toBe('csv.line51');
  });
});
