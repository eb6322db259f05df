import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsNumber, IsObject, IsString, Matches, Max, Min, ValidateNested } from 'class-validator';
import { PageQuery } from '../../../shared/http/page-query.js';
import { Optional } from '../../../shared/http/optional.decorator.js';
import { DEVICE_ID_PATTERN } from '../../../shared/kernel/device-id.js';
import { ALERT_STATES, type Alert, type AlertState } from '../domain/alert.js';
import { CRASH_METRIC, MAX_ALERT_RULES, MAX_FOR_SEC, MAX_WINDOW_SEC, MIN_WINDOW_SEC, RULE_BATTERY_ID_PATTERN, RULE_NAME_PATTERN, type AlertOp, type AlertRule } from '../domain/alert-rule.js';
import type { RulesView } from '../application/alert-rules.service.js';

export class AlertRuleDto {
  @ApiProperty({ example: 'soc-low', pattern: RULE_NAME_PATTERN.source })
  @IsString()
  @Matches(RULE_NAME_PATTERN, { message: 'ruleId must be 1–64 of A–Z a–z 0–9 _ . -' })
  ruleId!: string;

  @ApiProperty({ example: 'soc', pattern: RULE_NAME_PATTERN.source, description: `A metric name of the telemetry (soc, voltage, temperature, …), or \`${CRASH_METRIC}\`: the device's crash reports in the last \`windowSec\` seconds.` })
  @IsString()
  @Matches(RULE_NAME_PATTERN, { message: 'metric must be 1–64 of A–Z a–z 0–9 _ . -' })
  metric!: string;

  @ApiProperty({ enum: ['below', 'above'] })
  @IsIn(['below', 'above'])
  op!: AlertOp;

  @ApiProperty({ example: 20, description: 'The alert opens when the value is strictly beyond it (below or above).' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  threshold!: number;

  @ApiProperty({ example: 25, description: 'An open alert resolves when the value reaches it (≥ for below, ≤ for above): the hysteresis. Must not lie beyond the threshold.' })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  clearAt!: number;

  @ApiProperty({ example: 600, minimum: 0, maximum: MAX_FOR_SEC, description: 'Seconds the breach must hold (by the records’ times) before the alert opens; 0 opens on the first breaching record.' })
  @IsInt()
  @Min(0)
  @Max(MAX_FOR_SEC)
  forSec!: number;

  @ApiPropertyOptional({ example: 'main', pattern: RULE_BATTERY_ID_PATTERN.source, description: 'Only this battery; without it, every battery of the device.' })
  @Optional()
  @IsString()
  @Matches(RULE_BATTERY_ID_PATTERN, { message: 'batteryId must be 1–64 of A–Z a–z 0–9 . _ : -' })
  batteryId?: string;

  @ApiPropertyOptional({
    example: 600,
    minimum: MIN_WINDOW_SEC,
    maximum: MAX_WINDOW_SEC,
    description: `For the metric \`${CRASH_METRIC}\` only, and required there: the window its crash reports are counted in. The value is judged when a report arrives and again when the window has passed over it, so an alert on a crash loop resolves by itself once the device stops crashing.`,
  })
  @Optional()
  @IsInt()
  @Min(MIN_WINDOW_SEC)
  @Max(MAX_WINDOW_SEC)
  windowSec?: number;

  @ApiProperty({ example: true })
  @IsBoolean()
  enabled!: boolean;

  static from(rule: AlertRule): AlertRuleDto {
    return {
      ruleId: rule.ruleId,
      metric: rule.metric,
      op: rule.op,
      threshold: rule.threshold,
      clearAt: rule.clearAt,
      forSec: rule.forSec,
      ...(rule.batteryId !== undefined ? { batteryId: rule.batteryId } : {}),
      ...(rule.windowSec !== undefined ? { windowSec: rule.windowSec } : {}),
      enabled: rule.enabled,
    };
  }
}

export class AlertRulesRequest {
  @ApiProperty({ type: [AlertRuleDto], maxItems: MAX_ALERT_RULES })
  @IsArray()
  @ArrayMaxSize(MAX_ALERT_RULES)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => AlertRuleDto)
  rules!: AlertRuleDto[];
}

export class AlertRulesResponse {
  @ApiProperty({ type: [AlertRuleDto] })
  rules!: AlertRuleDto[];

  @ApiProperty({ example: true, description: 'True when the device has no rules of its own and follows the fleet defaults.' })
  inherited!: boolean;

  static from(view: RulesView): AlertRulesResponse {
    return { rules: view.rules.map(AlertRuleDto.from), inherited: view.inherited };
  }
}

export class DefaultAlertRulesResponse {
  @ApiProperty({ type: [AlertRuleDto] })
  rules!: AlertRuleDto[];
}

export class AlertsQuery extends PageQuery(200) {
  @ApiPropertyOptional({ example: 'gw-0001' })
  @Optional()
  @IsString()
  @Matches(DEVICE_ID_PATTERN, { message: 'deviceId must be 1–64 of A–Z a–z 0–9 . _ : -' })
  deviceId?: string;

  @ApiPropertyOptional({ enum: ALERT_STATES })
  @Optional()
  @IsIn(ALERT_STATES)
  state?: AlertState;
}

export class AlertResponse {
  @ApiProperty({ format: 'uuid', example: '0d6f1c7a-3b8e-4c2d-9f1a-5e7b2c4d8a90' })
  alertId!: string;

  @ApiProperty({ example: 'gw-0001' })
  deviceId!: string;

  @ApiProperty({ example: 'main', description: `The battery; empty for a rule on the device itself (the metric \`${CRASH_METRIC}\`).` })
  batteryId!: string;

  @ApiProperty({ example: 'soc-low' })
  ruleId!: string;

  @ApiProperty({ example: 'soc' })
  metric!: string;

  @ApiProperty({ enum: ['below', 'above'] })
  op!: AlertOp;

  @ApiProperty({ example: 20 })
  threshold!: number;

  @ApiProperty({ example: 25 })
  clearAt!: number;

  @ApiProperty({ example: 18.5, description: 'The value that opened the alert.' })
  value!: number;

  @ApiProperty({ enum: ALERT_STATES })
  state!: AlertState;

  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:10:00.000Z', description: `Time of the record that opened it (gateway clock); for \`${CRASH_METRIC}\`, when the service judged the count (its clock).` })
  openedAt!: string;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null })
  acknowledgedAt!: string | null;

  @ApiProperty({ type: 'string', format: 'date-time', nullable: true, example: null, description: 'Time of the record that resolved it, or when its rule was removed.' })
  resolvedAt!: string | null;

  @ApiProperty({ type: 'number', nullable: true, example: null, description: 'The value that resolved it; null when its rule was removed or disabled.' })
  resolvedValue!: number | null;

  static from(alert: Alert): AlertResponse {
    return {
      alertId: alert.alertId,
      deviceId: alert.deviceId,
      batteryId: alert.batteryId,
      ruleId: alert.ruleId,
      metric: alert.metric,
      op: alert.op,
      threshold: alert.threshold,
      clearAt: alert.clearAt,
      value: alert.value,
      state: alert.state,
      openedAt: alert.openedAt.toISOString(),
      acknowledgedAt: alert.acknowledgedAt?.toISOString() ?? null,
      resolvedAt: alert.resolvedAt?.toISOString() ?? null,
      resolvedValue: alert.resolvedValue,
    };
  }
}

export class AlertsResponse {
  @ApiProperty({ type: [AlertResponse] })
  items!: AlertResponse[];

  @ApiProperty({ type: 'string', nullable: true, example: null, description: 'Pass as `cursor` for the next (older) page; null on the last one.' })
  nextCursor!: string | null;
}
