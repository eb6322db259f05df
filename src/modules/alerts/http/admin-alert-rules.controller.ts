import { Body, Controller, Get, Put } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { AdminAuth } from '../../../auth/auth.decorators.js';
import { ApiProblems, JSON_BODY_PROBLEMS } from '../../../shared/http/api-problems.decorator.js';
import { AlertRules } from '../application/alert-rules.service.js';
import { Requester, type AuditContext } from '../../audit/index.js';
import { AlertRuleDto, AlertRulesRequest, DefaultAlertRulesResponse } from './alerts.dto.js';

@ApiTags('admin')
@Controller('admin/alert-rules/defaults')
export class AdminAlertRulesController {
  constructor(private readonly rules: AlertRules) {}

  @Get()
  @AdminAuth()
  @ApiOperation({ operationId: 'getDefaultAlertRules', summary: 'The fleet’s default alert rules: what devices without rules of their own follow' })
  @ApiResponse({ status: 200, type: DefaultAlertRulesResponse, description: 'The defaults.' })
  async get(): Promise<DefaultAlertRulesResponse> {
    return { rules: (await this.rules.currentDefaults()).map(AlertRuleDto.from) };
  }

  @Put()
  @AdminAuth()
  @ApiOperation({
    operationId: 'putDefaultAlertRules',
    summary: 'Replace the fleet’s default alert rules',
    description: 'Applies to every device without rules of its own. Alerts open under a rule that is removed or disabled resolve (reason rule_removed).',
  })
  @ApiBody({ type: AlertRulesRequest })
  @ApiResponse({ status: 200, type: DefaultAlertRulesResponse, description: 'Stored.' })
  @ApiProblems(JSON_BODY_PROBLEMS, { 400: ['INVALID_ALERT_RULE'] })
  async put(@Requester() by: AuditContext, @Body() body: AlertRulesRequest): Promise<DefaultAlertRulesResponse> {
    return { rules: (await this.rules.setDefaults(body.rules, by)).map(AlertRuleDto.from) };
  }
}
