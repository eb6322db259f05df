import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsEmail, IsString, Length, MaxLength, IsBoolean } from 'class-validator';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../domain/password-policy.js';

/** Addresses are compared trimmed and lower-cased; validation sees the trimmed form. */
const trimmed = Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value));

export class UpdateMeRequest {
  @ApiProperty({ example: false, description: 'E-mail about alerts, offline devices and failed updates.' })
  @IsBoolean()
  alertEmails!: boolean;
}

export class SignupRequest {
  @ApiProperty({ example: 'ada@example.com', maxLength: 254, format: 'email' })
  @trimmed
  @IsString()
  @MaxLength(254)
  @IsEmail({}, { message: 'email must be an e-mail address' })
  email!: string;

  @ApiProperty({
    description: `${PASSWORD_MIN_LENGTH}–${PASSWORD_MAX_LENGTH} characters, not one of the most used passwords, not one character repeated or counted (aaaaaaaaaa, 0123456789), not containing the e-mail address (400 PASSWORD_TOO_COMMON).`,
    example: 'correct horse battery',
    minLength: PASSWORD_MIN_LENGTH,
    maxLength: PASSWORD_MAX_LENGTH,
  })
  @IsString()
  @Length(PASSWORD_MIN_LENGTH, PASSWORD_MAX_LENGTH)
  password!: string;
}

export class LoginRequest {
  @ApiProperty({ example: 'ada@example.com', maxLength: 254 })
  @trimmed
  @IsString()
  @Length(1, 254)
  email!: string;

  @ApiProperty({ example: 'correct horse battery', minLength: 1, maxLength: 128 })
  @IsString()
  @Length(1, 128)
  password!: string;
}

export class VerifyEmailRequest {
  @ApiProperty({ description: 'The token from the verification link.', example: 'm3Q2x0c1Vb7nWq9Lk4Jh8Gf6Ds5Az2Xc1Vb7nWq9Lk4' , minLength: 1, maxLength: 256 })
  @IsString()
  @Length(1, 256)
  token!: string;
}

export class UserRefreshRequest {
  @ApiProperty({ example: 'ucr_3N5c0mY0t8d7Jq2Lk1Vx9Zb6Wf4Hs2Ra8Tg1Pe7Uu0', minLength: 1, maxLength: 256 })
  @IsString()
  @Length(1, 256)
  refreshToken!: string;
}

const NEW_PASSWORD_DESCRIPTION = `${PASSWORD_MIN_LENGTH}–${PASSWORD_MAX_LENGTH} characters, under the sign-up rules: not one of the most used passwords, not one character repeated or counted, not containing the e-mail address (400 PASSWORD_TOO_COMMON).`;

export class PasswordResetRequest {
  @ApiProperty({ example: 'ada@example.com', maxLength: 254, format: 'email' })
  @trimmed
  @IsString()
  @MaxLength(254)
  @IsEmail({}, { message: 'email must be an e-mail address' })
  email!: string;
}

export class PasswordResetConfirmRequest {
  @ApiProperty({ description: 'The token from the reset link (its `token` query parameter).', example: 'm3Q2x0c1Vb7nWq9Lk4Jh8Gf6Ds5Az2Xc1Vb7nWq9Lk4', minLength: 1, maxLength: 256 })
  @IsString()
  @Length(1, 256)
  token!: string;

  @ApiProperty({ description: NEW_PASSWORD_DESCRIPTION, example: 'a new correct horse', minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH })
  @IsString()
  @Length(PASSWORD_MIN_LENGTH, PASSWORD_MAX_LENGTH)
  password!: string;
}

export class ChangePasswordRequest {
  @ApiProperty({ example: 'correct horse battery', minLength: 1, maxLength: PASSWORD_MAX_LENGTH })
  @IsString()
  @Length(1, PASSWORD_MAX_LENGTH)
  currentPassword!: string;

  @ApiProperty({ description: NEW_PASSWORD_DESCRIPTION, example: 'a new correct horse', minLength: PASSWORD_MIN_LENGTH, maxLength: PASSWORD_MAX_LENGTH })
  @IsString()
  @Length(PASSWORD_MIN_LENGTH, PASSWORD_MAX_LENGTH)
  newPassword!: string;
}

export class DeleteAccountRequest {
  @ApiProperty({ description: "The account's password.", example: 'correct horse battery', minLength: 1, maxLength: PASSWORD_MAX_LENGTH })
  @IsString()
  @Length(1, PASSWORD_MAX_LENGTH)
  password!: string;
}
