/**
 * Whose an integration (an API key, a webhook) is: an account's, or an organization's, which stays
 * when the member who made it leaves. Both kinds are ids of their own tables, so the holder names
 * its kind.
 */
export interface IntegrationHolder {
  kind: 'user' | 'organization';
  id: string;
}

export const sameHolder = (a: IntegrationHolder, b: IntegrationHolder): boolean => a.kind === b.kind && a.id === b.id;
