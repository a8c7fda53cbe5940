/** Scope rules: which scopes a key was granted, and what a new key may be granted. */
import { Either } from "effect"
import { InsufficientScopes, type ValidationIssue } from "../shared/errors.js"
import { allScopes, type Scope } from "../shared/models.js"

/** Succeeds when `granted` holds `required`; else insufficient_scopes naming both. */
export const checkScope = (
  granted: ReadonlyArray<Scope>,
  required: Scope
): Either.Either<void, InsufficientScopes> =>
  granted.includes(required)
    ? Either.void
    : Either.left(
        new InsufficientScopes({
          message: `This API key lacks the scope ${required}.`,
          required: [required],
          granted: [...granted]
        })
      )

export const isScope = (value: unknown): value is Scope =>
  typeof value === "string" && (allScopes as ReadonlyArray<string>).includes(value)

/**
 * Problems with the scopes asked for a new key: the list must be non-empty, each entry a
 * known scope, none repeated. Paths are "scopes" or "scopes.N".
 */
export const scopeIssues = (
  scopes: ReadonlyArray<unknown>,
  path = "scopes"
): ReadonlyArray<ValidationIssue> => {
  if (scopes.length === 0) return [{ path, message: "must name at least one scope" }]
  const issues: Array<ValidationIssue> = []
  const seen = new Set<unknown>()
  scopes.forEach((scope, index) => {
    if (!isScope(scope))
      issues.push({ path: `${path}.${index}`, message: `must be one of ${allScopes.join(", ")}` })
    else if (seen.has(scope)) issues.push({ path: `${path}.${index}`, message: "is a duplicate" })
    seen.add(scope)
  })
  return issues
}
