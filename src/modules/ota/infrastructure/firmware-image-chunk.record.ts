import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';

/** One 256 KiB piece of a release's image, in order (seq from 0); stored uncompressed (migration FirmwareImages). */
@Entity({ name: 'firmware_image_chunks' })
export class FirmwareImageChunkRecord {
  @PrimaryColumn({ name: 'release_id', type: 'uuid', primaryKeyConstraintName: 'firmware_image_chunks_pkey' })
  @ForeignKey('firmware_releases', { name: 'firmware_image_chunks_release_id_fkey', onDelete: 'CASCADE' })
  releaseId!: string;

  @PrimaryColumn({ type: 'integer', primaryKeyConstraintName: 'firmware_image_chunks_pkey' })
  seq!: number;

  @Column({ type: 'bytea' })
  data!: Buffer;
}
