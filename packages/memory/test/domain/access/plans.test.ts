import { describe, expect, it } from "@effect/vitest"
import {
  hasApiAccess,
  maxApiKeys,
  maxWebhookEndpoints,
  monthlySubmissionQuota,
  type Plan,
  requestsPerMinute
} from "@intake/domain"

const workspace = (
  plan: Plan,
  overrides: { monthlySubmissionQuota?: number | null; rateLimitPerMinute?: number | null } = {}
) => ({ plan, monthlySubmissionQuota: null, rateLimitPerMinute: null, ...overrides })

describe("plans", () => {
  it("free has no API access; pro and business do", () => {
    expect([hasApiAccess("free"), hasApiAccess("pro"), hasApiAccess("business")]).toEqual([false, true, true])
  })

  it("API keys per workspace: free 0, pro 3, business 10", () => {
    expect([maxApiKeys("free"), maxApiKeys("pro"), maxApiKeys("business")]).toEqual([0, 3, 10])
  })

  it("requests per minute: pro 100, business 500, unless the workspace overrides it", () => {
    expect(requestsPerMinute(workspace("pro"))).toBe(100)
    expect(requestsPerMinute(workspace("business"))).toBe(500)
    expect(requestsPerMinute(workspace("pro", { rateLimitPerMinute: 5_000 }))).toBe(5_000)
    expect(requestsPerMinute(workspace("business", { rateLimitPerMinute: 20 }))).toBe(20)
    expect(requestsPerMinute(workspace("business", { rateLimitPerMinute: null }))).toBe(500)
  })

  it("monthly submissions: free 0, pro 1,000, business 10,000, unless overridden (0 included)", () => {
    expect(monthlySubmissionQuota(workspace("free"))).toBe(0)
    expect(monthlySubmissionQuota(workspace("pro"))).toBe(1_000)
    expect(monthlySubmissionQuota(workspace("business"))).toBe(10_000)
    expect(monthlySubmissionQuota(workspace("pro", { monthlySubmissionQuota: 50_000 }))).toBe(50_000)
    expect(monthlySubmissionQuota(workspace("business", { monthlySubmissionQuota: 0 }))).toBe(0)
  })

  it("webhook endpoints: free 0, pro 10, business 50", () => {
    expect(["free", "pro", "business"].map((plan) => maxWebhookEndpoints({ plan: plan as Plan }))).toEqual([
      0, 10, 50
    ])
  })
})
