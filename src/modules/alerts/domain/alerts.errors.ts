import { DomainError, type FieldError } from '../../../shared/domain-error.js';

/** Every problem of a rule set at once, each naming the rule by index (`rules[2].forSec`). */
export class InvalidAlertRuleError extends DomainError {
  constructor(errors: FieldError[]) {
    super('INVALID_ALERT_RULE', 'invalid', errors.map((error) => error.message).join('; '), { errors });
  }
}
