import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { PROBLEM_CODES, type ProblemCode } from '../problem-types.js';

export class FieldErrorResponse {
  @ApiProperty({ example: 'claimCode' })
  field!: string;

  @ApiProperty({ example: 'claimCode is required when firmwareVersion is 0.1.4 or later' })
  message!: string;
}

/** RFC 9457 problem document: the body of every error response. */
export class ProblemResponse {
  @ApiProperty({ example: 'urn:device-cloud:problem:validation-failed', description: 'Identifies the problem type.' })
  type!: string;

  @ApiProperty({ example: 'The request is not valid' })
  title!: string;

  @ApiProperty({ example: 400 })
  status!: number;

  @ApiProperty({ example: 'The request is not valid.' })
  detail!: string;

  @ApiProperty({ example: '/api/v1/device/register' })
  instance!: string;

  @ApiProperty({
    enum: PROBLEM_CODES,
    enumName: 'ProblemCode',
    example: 'VALIDATION_FAILED',
    description: 'Stable machine-readable code: branch on it. Each operation lists the codes it can answer per status.',
  })
  code!: ProblemCode;

  @ApiProperty({ example: '9b2f3c1e-6d3a-4c47-9a34-0f1d1e2b7c55', description: 'Correlation id, also in the service log.' })
  requestId!: string;

  @ApiPropertyOptional({ type: [FieldErrorResponse], description: 'One entry per offending field (validation errors only).' })
  errors?: FieldErrorResponse[];
}
