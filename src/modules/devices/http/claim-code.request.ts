import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MaxLength } from 'class-validator';
import { ClaimCode } from '../domain/claim-code.js';

export class SetClaimCodeRequest {
  @ApiProperty({ description: 'Letters in two or more hyphen-joined groups, 8+ letters; case-insensitive.', example: 'QUICK-AMBER-FALCON', pattern: ClaimCode.PATTERN.source, maxLength: ClaimCode.MAX_LENGTH })
  @IsString()
  @MaxLength(ClaimCode.MAX_LENGTH)
  @Matches(ClaimCode.PATTERN, { message: 'claimCode must be letters in two or more groups joined by single hyphens' })
  claimCode!: string;
}
