import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, TypeOrmHealthIndicator, type HealthCheckResult } from '@nestjs/terminus';
import { Public } from '../auth/auth.decorators.js';
import { ShutdownState } from './shutdown-state.js';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly shutdown: ShutdownState,
  ) {}

  @Get('live')
  @Public()
  @HealthCheck()
  @ApiOperation({ operationId: 'getLiveness', summary: 'The process is up (no dependency is checked)' })
  live(): Promise<HealthCheckResult> {
    return this.health.check([]);
  }

  @Get('ready')
  @Public()
  @HealthCheck()
  @ApiOperation({ operationId: 'getReadiness', summary: 'Ready for traffic: the database answers and no shutdown is under way' })
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.shutdown.check('lifecycle'),
      () => this.database.pingCheck('database', { timeout: 2000 }),
    ]);
  }
}
