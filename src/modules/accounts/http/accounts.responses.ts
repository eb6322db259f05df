import { ApiProperty } from '@nestjs/swagger';
import type { Role, User } from '../domain/user.js';

export class SignupResponse {
  @ApiProperty({ format: 'uuid', example: '3f0b6a8e-2a52-4f7e-9a35-8c0d7c5e1b2a' })
  userId!: string;

  @ApiProperty({ example: 'ada@example.com' })
  email!: string;

  @ApiProperty({ example: false })
  emailVerified!: boolean;

  static from(user: User): SignupResponse {
    return { userId: user.id, email: user.email, emailVerified: user.emailVerified };
  }
}

export class EmailVerifiedResponse {
  @ApiProperty({ example: true })
  emailVerified!: boolean;
}

export class UserMeResponse extends SignupResponse {
  @ApiProperty({ enum: ['customer', 'admin'], example: 'customer' })
  role!: Role;

  static override from(user: User): UserMeResponse {
    return { ...SignupResponse.from(user), role: user.role };
  }
}
