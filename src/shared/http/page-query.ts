import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { Optional } from './optional.decorator.js';
import { QueryInt } from './query-int.decorator.js';

/** `limit` (1–maxLimit, default 50) and `cursor`: the query of every cursor-paginated list. Extend it. */
export function PageQuery(maxLimit: number) {
  class Page {
    @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: maxLimit, default: 50, description: 'Items per page.' })
    @Optional()
    @QueryInt()
    @IsInt()
    @Min(1)
    @Max(maxLimit)
    limit?: number;

    @ApiPropertyOptional({ type: 'string', maxLength: 200, description: 'nextCursor of the previous page, exactly as returned; anything else is a 400 naming `cursor`.' })
    @Optional()
    @IsString()
    @MaxLength(200)
    cursor?: string;
  }
  return Page;
}
