import { describe, expect, it } from "@effect/vitest"
import { allScopes, checkScope, isScope, scopeIssues } from "@intake/domain"
import { Either } from "effect"

describe("scopes", () => {
  it("a granted scope passes", () => {
    expect(Either.isRight(checkScope(["read:submissions", "manage:webhooks"], "manage:webhooks"))).toBe(true)
  })

  it("a missing scope is insufficient_scopes naming the required and every granted scope", () => {
    const result = checkScope(["read:intake-bots", "read:submissions"], "manage:webhooks")
    const error = Either.getLeft(result).pipe((o) => (o._tag === "Some" ? o.value : undefined))
    expect(error?.code).toBe("insufficient_scopes")
    expect(error?.httpStatus).toBe(403)
    expect(error?.details).toEqual({
      required: ["manage:webhooks"],
      granted: ["read:intake-bots", "read:submissions"]
    })
  })

  it("write does not imply read, nor read write", () => {
    expect(Either.isLeft(checkScope(["write:intake-bots"], "read:intake-bots"))).toBe(true)
    expect(Either.isLeft(checkScope(["read:intake-bots"], "write:intake-bots"))).toBe(true)
  })

  it("knows the six scopes of the contract", () => {
    expect([...allScopes].sort()).toEqual(
      [
        "manage:webhooks",
        "read:contacts",
        "read:intake-bots",
        "read:records",
        "read:submissions",
        "write:intake-bots"
      ].sort()
    )
    expect(isScope("read:submissions")).toBe(true)
    expect(isScope("read:Submissions")).toBe(false)
    expect(isScope(42)).toBe(false)
  })

  it("scopes for a new key: non-empty, known, no duplicates, each problem at its index", () => {
    expect(scopeIssues(["read:submissions", "manage:webhooks"])).toEqual([])
    expect(scopeIssues([])).toEqual([{ path: "scopes", message: expect.any(String) }])
    expect(scopeIssues(["read:submissions", "admin", "read:submissions", 7]).map((i) => i.path)).toEqual([
      "scopes.1",
      "scopes.2",
      "scopes.3"
    ])
  })
})
