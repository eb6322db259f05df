import fc from 'fast-check';
import { CopyBinaryPieces } from './copy-binary-pieces.js';

/** What PostgreSQL sends for `COPY (SELECT i, piece …) TO STDOUT (FORMAT binary)` over these rows. */
function copyOutput(rows: Array<{ index: number; bytes: Buffer }>): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)];
  for (const { index, bytes } of rows) {
    const header = Buffer.alloc(14);
    header.writeInt16BE(2, 0);
    header.writeInt32BE(4, 2);
    header.writeInt32BE(index, 6);
    header.writeInt32BE(bytes.length, 10);
    parts.push(header, bytes);
  }
  const trailer = Buffer.alloc(2);
  trailer.writeInt16BE(-1, 0);
  parts.push(trailer);
  return Buffer.concat(parts);
}

/** `bytes` cut at `cuts` (positions, any order, repeats allowed). */
function cutAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(from, point));
    from = point;
  }
  return pieces;
}

const readAll = (rows: Array<{ index: number; bytes: Buffer }>, lengths: number[], pieces: Buffer[]) => {
  const targets = lengths.map((length) => ({ into: Buffer.alloc(length + 3, 0xee), length }));
  const parser = new CopyBinaryPieces(targets);
  for (const piece of pieces) parser.push(piece);
  return { targets, whole: parser.finish() };
};

describe('CopyBinaryPieces', () => {
  it('copies every row into its target, in whatever order the rows come and wherever the output is cut', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 20 }), fc.boolean(), (contents, cuts, reversed) => {
        const rows = contents.map((bytes, index) => ({ index, bytes: Buffer.from(bytes) }));
        const output = copyOutput(reversed ? [...rows].reverse() : rows);
        const { targets, whole } = readAll(rows, contents.map((bytes) => bytes.length), cutAt(output, cuts));
        expect(whole).toBe(true);
        for (const [index, target] of targets.entries()) {
          expect(target.into.subarray(0, target.length)).toEqual(rows[index].bytes);
          // Nothing written past the piece.
          expect([...target.into.subarray(target.length)]).toEqual([0xee, 0xee, 0xee]);
        }
      }),
    );
  });

  it('is not whole when a row is missing, repeated, of another length, or anything follows the trailer', () => {
    const rows = [Buffer.from('first'), Buffer.from('second')].map((bytes, index) => ({ index, bytes }));
    const lengths = [5, 6];
    expect(readAll(rows, lengths, [copyOutput(rows)]).whole).toBe(true);
    expect(readAll(rows, lengths, [copyOutput(rows.slice(0, 1))]).whole).toBe(false);
    expect(readAll(rows, lengths, [copyOutput([rows[0], rows[0], rows[1]])]).whole).toBe(false);
    expect(readAll(rows, [5, 7], [copyOutput(rows)]).whole).toBe(false);
    expect(readAll(rows, lengths, [copyOutput(rows), Buffer.from([0])]).whole).toBe(false);
    expect(readAll(rows, lengths, [copyOutput(rows).subarray(0, 30)]).whole).toBe(false);
    expect(readAll(rows, lengths, [Buffer.from('NOTCOPY'), copyOutput(rows)]).whole).toBe(false);
  });
});
