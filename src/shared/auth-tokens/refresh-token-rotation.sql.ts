/**
 * Rotation as one statement, on purpose: the CTE retires the presented token only if it is still
 * live and inserts its successor from the retired row. A concurrent rotation of the same token
 * waits for this one's row lock, then finds the token rotated and this successor committed; no
 * transaction spans a round trip. Parameters: $1 token id, $2 now, $3 successor hash, $4 successor expiry.
 */
export function rotateRefreshTokenSql(table: string, subjectColumn: string): string {
  return `WITH presented AS (
         UPDATE ${table} SET rotated_at = $2 WHERE id = $1 AND rotated_at IS NULL AND revoked_at IS NULL
         RETURNING ${subjectColumn} AS subject_id, token_version, family_id
       )
       INSERT INTO ${table} (${subjectColumn}, token_version, family_id, token_hash, issued_at, expires_at)
       SELECT subject_id, token_version, family_id, $3, $2, $4 FROM presented
       RETURNING id`;
}
