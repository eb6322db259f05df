import type { Argon2Cost } from '../../src/shared/crypto/secret-hasher.js';

/**
 * argon2id at its least cost (1 MiB, one pass) for the tests' service: they hash thousands of
 * passwords and claim codes, which at the production cost (ARGON2_OPTIONS, ~27 ms each) took a
 * third of the CPU of the files that sign up customers and register gateways. What they check —
 * an argon2id hash is stored, the right value verifies, a wrong one does not, an unknown account
 * burns a hash too — holds at any cost. The production cost has its own test
 * (password-hash-parameters.e2e-spec.ts), and the service takes no other: only createApp's
 * callers can pass one, and main.ts does not.
 */
export const TEST_HASH_COST: Argon2Cost = { memoryCost: 1024, timeCost: 1, parallelism: 1 };
