import { Module } from '@nestjs/common';
import { DevicesModule } from '../devices/index.js';
import { EventsModule } from '../events/index.js';
import { SharingModule } from '../sharing/index.js';
import { ClaimsService } from './application/claims.service.js';
import { ClaimAudit } from './domain/claim-audit.js';
import { ClaimsController } from './http/claims.controller.js';
import { TypeOrmClaimAudit } from './infrastructure/typeorm-claim-audit.js';

@Module({
  imports: [DevicesModule, EventsModule, SharingModule],
  controllers: [ClaimsController],
  providers: [ClaimsService, { provide: ClaimAudit, useClass: TypeOrmClaimAudit }],
})
export class ClaimsModule {}
