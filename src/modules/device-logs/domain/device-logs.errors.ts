import { DomainError } from '../../../shared/domain-error.js';

export class LogQuotaExceededError extends DomainError {
  constructor(limitBytes: number, retryAfterSec: number) {
    super('LOG_QUOTA_EXCEEDED', 'rate-limited', `The device stored its ${limitBytes} bytes of log lines for today (UTC). Send again after midnight UTC.`, { retryAfterSec, limiter: 'log-bytes-per-device' });
  }
}
