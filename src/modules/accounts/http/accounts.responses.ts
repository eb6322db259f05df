import { ApiProperty } from '@nestjs/swagger';
import type { Role, User } from '../domain/user.js';

/** The same for a new address and a taken one: signup does not tell who has an account. */
export class SignupResponse {
  @ApiProperty({ description: 'The address as stored (trimmed, lower-cased). A verification link is on its way to it; when the address already has an account, its owner gets a notice instead.', example: 'ada@example.com' })
  email!: string;

  static of(email: string): SignupResponse {
    return { email };
  }
}

export class EmailVerifiedResponse {
  @ApiProperty({ example: true })
  emailVerified!: boolean;
}

export class UserMeResponse {
  @ApiProperty({ format: 'uuid', example: '3f0b6a8e-2a52-4f7e-9a35-8c0d7c5e1b2a' })
  userId!: string;

  @ApiProperty({ example: 'ada@example.com' })
  email!: string;

  @ApiProperty({ example: false })
  emailVerified!: boolean;

  @ApiProperty({ enum: ['customer', 'admin'], example: 'customer' })
  role!: Role;

  @ApiProperty({ example: true, description: 'E-mail about alerts, offline devices and failed updates (at most one digest a minute).' })
  alertEmails!: boolean;

  static from(user: User): UserMeResponse {
    return { userId: user.id, email: user.email, emailVerified: user.emailVerified, role: user.role, alertEmails: user.alertEmails };
  }
}

export class PasswordResetResponse {
  @ApiProperty({ example: true, description: 'The new password is set; every session of the account has ended. Sign in with the new password.' })
  passwordChanged!: boolean;
}
