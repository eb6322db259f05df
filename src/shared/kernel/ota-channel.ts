/** Release channel of a gateway (its configuration) and of a firmware release. */
export type OtaChannel = 'stable' | 'beta';
