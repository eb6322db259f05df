import { ApiProperty } from '@nestjs/swagger';
import type { TokenPair } from '../auth-tokens/access-tokens.js';

/** A token pair as the API answers it (logins, refreshes; registration adds to it). */
export class TokenResponse {
  @ApiProperty({ description: 'Access token (JWT) for Authorization: Bearer.', example: 'eyJhbGciOiJIUzI1NiIsInR5cCI6ImF0K2p3dCJ9…' })
  accessToken!: string;

  @ApiProperty({ description: 'Opaque, single-use refresh token (dcr_ for devices, ucr_ for customers).', example: 'dcr_3N5c0mY0t8d7Jq2Lk1Vx9Zb6Wf4Hs2Ra8Tg1Pe7Uu0' })
  refreshToken!: string;

  @ApiProperty({ enum: ['Bearer'], example: 'Bearer' })
  tokenType!: 'Bearer';

  @ApiProperty({ description: 'Seconds until the access token expires.', example: 3600 })
  expiresIn!: number;

  static from(tokens: TokenPair): TokenResponse {
    return { accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, tokenType: tokens.tokenType, expiresIn: tokens.expiresIn };
  }
}
