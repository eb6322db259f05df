/**
 * Plain SQL on a connection or inside an open transaction. Framework-free, so domain ports can take
 * one: a repository method that changes something can let its caller write, in the same
 * transaction, what reports the change (an event, a job).
 */
export interface SqlRunner {
  rows<T>(text: string, values?: unknown[], name?: string): Promise<T[]>;
}
