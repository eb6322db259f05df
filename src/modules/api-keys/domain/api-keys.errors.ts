import { DomainError } from '../../../shared/domain-error.js';
import { MAX_API_KEYS_PER_USER } from './api-key.js';

export class TooManyApiKeysError extends DomainError {
  constructor() {
    super('TOO_MANY_API_KEYS', 'conflict', `An account can have at most ${MAX_API_KEYS_PER_USER} API keys. Delete one first.`);
  }
}
