import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../shared/http/api-problems.decorator.js';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { Public } from '../auth/auth.decorators.js';
import { DatabaseHealth } from './database-health.js';
import { ShutdownState } from './shutdown-state.js';

const dependencyStates = (description: string) =>
  ApiProperty({
    description,
    example: { database: { status: 'up', responseTime: 3 } },
    type: 'object',
    additionalProperties: {
      type: 'object',
      properties: { status: { type: 'string', enum: ['up', 'down'] }, responseTime: { type: 'number', description: 'Milliseconds the check took (database).' } },
      required: ['status'],
    },
  });

/** @nestjs/terminus's result, as it is sent. */
class HealthResponse {
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status!: string;

  @dependencyStates('Dependencies that are up.')
  info!: Record<string, { status: 'up' | 'down'; responseTime?: number }>;

  @dependencyStates('Dependencies that are down (empty when ready).')
  error!: Record<string, { status: 'up' | 'down'; responseTime?: number }>;

  @dependencyStates('State of each checked dependency.')
  details!: Record<string, { status: 'up' | 'down'; responseTime?: number }>;
}

/** Not cached; documented here rather than by terminus, whose 503 is not a problem document. */
const Probe = () => HealthCheck({ noCache: true, swaggerDocumentation: false });

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabaseHealth,
    private readonly shutdown: ShutdownState,
  ) {}

  @Get('live')
  @Public()
  @Probe()
  @ApiOperation({ operationId: 'getLiveness', summary: 'The process is up (no dependency is checked)' })
  @ApiResponse({ status: 200, type: HealthResponse, description: 'Alive.' })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @Public()
  @Probe()
  @ApiOperation({ operationId: 'getReadiness', summary: 'Ready for traffic: the database answers and no shutdown is under way' })
  @ApiResponse({ status: 200, type: HealthResponse, description: 'Ready.' })
  @ApiProblems({ 503: ['SERVICE_UNAVAILABLE'] })
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.shutdown.check('lifecycle'),
      () => this.database.check('database'),
    ]);
  }
}
