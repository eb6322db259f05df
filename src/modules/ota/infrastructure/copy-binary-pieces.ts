/** COPY's binary format starts with this signature, then flags (4 bytes) and the header extension's length (4). */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const FILE_HEADER_BYTES = 19;
/** A row of (int4 index, bytea piece): field count (2), the index's length (4) and value (4), the piece's length (4). */
const ROW_HEADER_BYTES = 2 + 4 + 4 + 4;
/** The file trailer: a field count of -1. */
const TRAILER_BYTES = 2;

/** Where the piece of row `index` goes: `length` bytes into `into`, from its start. */
export interface PieceTarget {
  into: Buffer;
  length: number;
}

/**
 * Reads the output of `COPY (SELECT index, piece …) TO STDOUT (FORMAT binary)` as it arrives, in
 * pieces cut anywhere, and copies each row's bytes straight into its target: no row is gathered in
 * memory of its own. `finish` tells whether every target got its bytes, and nothing else came.
 */
export class CopyBinaryPieces {
  /** The header being gathered (the file's, a row's or the trailer), and how much of it is here. */
  private readonly header = Buffer.alloc(FILE_HEADER_BYTES);
  private headerHave = 0;
  private state: 'file' | 'row' | 'bytes' | 'done' = 'file';
  private current: PieceTarget | null = null;
  private bytesHave = 0;
  private readonly filled = new Set<number>();
  private broken: string | null = null;

  constructor(private readonly targets: readonly PieceTarget[]) {}

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && this.broken === null) {
      if (this.state === 'bytes') {
        const target = this.current!;
        const take = Math.min(target.length - this.bytesHave, chunk.length - at);
        chunk.copy(target.into, this.bytesHave, at, at + take);
        this.bytesHave += take;
        at += take;
        if (this.bytesHave === target.length) this.state = 'row';
        continue;
      }
      if (this.state === 'done') {
        this.broken = 'bytes after the trailer';
        return;
      }
      // A row's header, or the trailer (its first two bytes are -1): gathered before it is read.
      const wanted = this.state === 'file' ? FILE_HEADER_BYTES : this.headerHave < TRAILER_BYTES || this.header.readInt16BE(0) !== -1 ? ROW_HEADER_BYTES : TRAILER_BYTES;
      const take = Math.min(wanted - this.headerHave, chunk.length - at);
      chunk.copy(this.header, this.headerHave, at, at + take);
      this.headerHave += take;
      at += take;
      if (this.state === 'row' && this.headerHave === TRAILER_BYTES && this.header.readInt16BE(0) === -1) {
        this.state = 'done';
        this.headerHave = 0;
        continue;
      }
      if (this.headerHave === wanted) this.readHeader();
    }
  }

  /** True when the output was whole: every target filled once, the trailer read. */
  finish(): boolean {
    return this.broken === null && this.state === 'done' && this.filled.size === this.targets.length;
  }

  private readHeader(): void {
    const header = this.header;
    this.headerHave = 0;
    if (this.state === 'file') {
      if (!header.subarray(0, SIGNATURE.length).equals(SIGNATURE) || header.readUInt32BE(15) !== 0) this.broken = 'not a binary COPY header';
      else this.state = 'row';
      return;
    }
    const index = header.readInt32BE(6);
    const target = this.targets[index];
    if (header.readInt16BE(0) !== 2 || header.readInt32BE(2) !== 4 || !target || this.filled.has(index) || header.readInt32BE(10) !== target.length) {
      this.broken = `unexpected row ${index}`;
      return;
    }
    this.filled.add(index);
    this.current = target;
    this.bytesHave = 0;
    this.state = target.length > 0 ? 'bytes' : 'row';
  }
}
