import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';

/** A release's symbol map: [start, end, name] code ranges sorted by start (domain/symbol-map.ts). */
@Entity({ name: 'firmware_symbols' })
export class FirmwareSymbolsRecord {
  @PrimaryColumn({ name: 'release_id', type: 'uuid', primaryKeyConstraintName: 'firmware_symbols_pkey' })
  @ForeignKey('firmware_releases', { name: 'firmware_symbols_release_id_fkey', onDelete: 'CASCADE' })
  releaseId!: string;

  @Column({ type: 'jsonb' })
  symbols!: Array<[number, number, string]>;

  @Column({ name: 'symbol_count', type: 'integer' })
  symbolCount!: number;

  @Column({ name: 'uploaded_at', type: 'timestamptz' })
  uploadedAt!: Date;
}
