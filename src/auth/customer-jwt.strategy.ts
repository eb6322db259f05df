import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-jwt';
import { Secrets } from '../config/secrets.js';
import { CUSTOMER_TOKEN_AUDIENCE } from '../shared/auth-tokens/access-tokens.js';
import { CustomerAuthenticator, CustomerPrincipal } from './principals.js';
import { accessTokenOptions, sessionOf, type CompleteToken } from './access-token.js';

/** Customer access tokens: their own key and audience; role, verification and the session's state come from the database. */
@Injectable()
export class CustomerJwtStrategy extends PassportStrategy(Strategy, 'customer-jwt') {
  constructor(
    secrets: Secrets,
    private readonly accounts: CustomerAuthenticator,
  ) {
    super(accessTokenOptions(secrets.customerJwtSecret, CUSTOMER_TOKEN_AUDIENCE));
  }

  validate(token: CompleteToken): Promise<CustomerPrincipal> {
    return this.accounts.authenticate(sessionOf(token));
  }
}
