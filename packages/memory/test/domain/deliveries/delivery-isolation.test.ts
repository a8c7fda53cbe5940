/** The isolation policies (docs/webhooks.md, "Isolation"): breaker, allowance, rate spacing, fair order. */
import { describe, expect, it } from "@effect/vitest"
import { DeliveryIsolation } from "@intake/domain"

const {
  circuitState,
  cooldownMs,
  circuitAfterAttempt,
  sendSpacingMs,
  claimAllowance,
  nextClaimableAt,
  earliestClaimableAt,
  fairOrder,
  planClaim,
  endpointsToClaim,
  rateLimitIssues
} = DeliveryIsolation

const policy: DeliveryIsolation.IsolationPolicy = {
  maxInFlight: 2,
  circuitFailures: 5,
  cooldownMs: 30_000,
  maxCooldownMs: 240_000
}

const backlog = (
  overrides: Partial<DeliveryIsolation.EndpointBacklog> = {}
): DeliveryIsolation.EndpointBacklog => ({
  webhookId: "wh_a",
  workspaceId: "ws_1",
  consecutiveFails: 0,
  circuitOpenUntil: null,
  rateLimit: null,
  nextSendAt: null,
  inFlight: 0,
  headDueAt: 0,
  firstLeaseEnd: null,
  ...overrides
})

describe("circuit breaker", () => {
  it("is closed without an open-until time, open before it, half open from it on", () => {
    expect(circuitState({ consecutiveFails: 9, circuitOpenUntil: null }, 5)).toBe("closed")
    expect(circuitState({ consecutiveFails: 5, circuitOpenUntil: 100 }, 99)).toBe("open")
    expect(circuitState({ consecutiveFails: 5, circuitOpenUntil: 100 }, 100)).toBe("half_open")
    expect(circuitState({ consecutiveFails: 5, circuitOpenUntil: 100 }, 10_000)).toBe("half_open")
  })

  it("stays open as long as the endpoint has been failing, at least the cool-down, at most the maximum", () => {
    expect(
      [0, 10_000, 30_000, 45_000, 120_000, 240_000, 10_000_000].map((ms) => cooldownMs(ms, policy))
    ).toEqual([30_000, 30_000, 30_000, 45_000, 120_000, 240_000, 240_000])
  })

  it("opens at the threshold's failure, from the attempt's end; stays closed below it; a success closes it", () => {
    const failing = { ok: false, failingSince: 0, finishedAt: 40_000 }
    expect(circuitAfterAttempt({ ...failing, consecutiveFails: 4 }, policy)).toBeNull()
    expect(circuitAfterAttempt({ ...failing, consecutiveFails: 5 }, policy)).toBe(80_000)
    // Failing for 5 s only: the cool-down's 30 s.
    expect(circuitAfterAttempt({ ...failing, failingSince: 35_000, consecutiveFails: 5 }, policy)).toBe(
      70_000
    )
    expect(
      circuitAfterAttempt({ ok: true, consecutiveFails: 0, failingSince: null, finishedAt: 1_000 }, policy)
    ).toBeNull()
  })

  it("a failed probe about doubles the wait; attempts in flight when it opened do not stretch it", () => {
    // Failing since 0; the circuit opens when the 5th failure ends at 20 s: open until 50 s.
    const open = circuitAfterAttempt(
      { ok: false, consecutiveFails: 5, failingSince: 0, finishedAt: 20_000 },
      policy
    )
    expect(open).toBe(50_000)
    // Three more of the same batch fail a moment later: about the same time, not 8 times longer.
    expect(
      circuitAfterAttempt({ ok: false, consecutiveFails: 8, failingSince: 0, finishedAt: 20_050 }, policy)
    ).toBe(50_050)
    // The probe at 50 s fails at 60 s: open for 60 s more; the next one at 120 s for 120 s more.
    expect(
      circuitAfterAttempt({ ok: false, consecutiveFails: 9, failingSince: 0, finishedAt: 60_000 }, policy)
    ).toBe(120_000)
    expect(
      circuitAfterAttempt({ ok: false, consecutiveFails: 10, failingSince: 0, finishedAt: 130_000 }, policy)
    ).toBe(130_000 + 130_000)
  })
})

describe("rate limit", () => {
  it("spaces sends by whole milliseconds, rounded up so the rate is never exceeded", () => {
    expect([1, 2, 3, 7, 1000].map(sendSpacingMs)).toEqual([1000, 500, 334, 143, 1])
    for (let rate = 1; rate <= 1000; rate++) expect(1000 / sendSpacingMs(rate)).toBeLessThanOrEqual(rate)
  })

  it("accepts whole numbers from 1 to 1000, or null", () => {
    for (const ok of [null, 1, 500, 1000]) expect(rateLimitIssues(ok)).toEqual([])
    for (const bad of [0, -1, 1001, 1.5, "10", Number.NaN, true])
      expect(rateLimitIssues(bad)).toEqual([
        { path: "rate_limit", message: expect.stringContaining("1 to 1000") }
      ])
  })
})

describe("claim allowance", () => {
  it("is the room under the in-flight limit when closed", () => {
    expect(claimAllowance(backlog(), 10, policy)).toBe(2)
    expect(claimAllowance(backlog({ inFlight: 1 }), 10, policy)).toBe(1)
    expect(claimAllowance(backlog({ inFlight: 2 }), 10, policy)).toBe(0)
    expect(claimAllowance(backlog({ inFlight: 7 }), 10, policy)).toBe(0)
  })

  it("is nothing before the head is due or without a head", () => {
    expect(claimAllowance(backlog({ headDueAt: 11 }), 10, policy)).toBe(0)
    expect(claimAllowance(backlog({ headDueAt: null }), 10, policy)).toBe(0)
  })

  it("is nothing while open, one probe when half open and none is in flight", () => {
    const failing = { consecutiveFails: 5, circuitOpenUntil: 100 }
    expect(claimAllowance(backlog(failing), 99, policy)).toBe(0)
    expect(claimAllowance(backlog(failing), 100, policy)).toBe(1)
    expect(claimAllowance(backlog({ ...failing, inFlight: 1 }), 100, policy)).toBe(0)
  })

  it("is one at a time under a rate limit, and none before its next send", () => {
    expect(claimAllowance(backlog({ rateLimit: 100 }), 10, policy)).toBe(1)
    expect(claimAllowance(backlog({ rateLimit: 100, nextSendAt: 10 }), 10, policy)).toBe(1)
    expect(claimAllowance(backlog({ rateLimit: 100, nextSendAt: 11 }), 10, policy)).toBe(0)
    expect(claimAllowance(backlog({ rateLimit: 100, inFlight: 2 }), 10, policy)).toBe(0)
    // A next-send time left over from a rate limit since removed does not hold sends back.
    expect(claimAllowance(backlog({ rateLimit: null, nextSendAt: 1_000 }), 10, policy)).toBe(2)
  })
})

describe("next claimable time", () => {
  it("is the head's due time when there is room", () => {
    expect(nextClaimableAt(backlog({ headDueAt: 500 }), 10, policy)).toBe(500)
  })

  it("is when the circuit half opens, or the rate limit's next send, whichever is later", () => {
    expect(nextClaimableAt(backlog({ consecutiveFails: 5, circuitOpenUntil: 900 }), 10, policy)).toBe(900)
    expect(nextClaimableAt(backlog({ rateLimit: 2, nextSendAt: 700 }), 10, policy)).toBe(700)
    expect(
      nextClaimableAt(
        backlog({ consecutiveFails: 5, circuitOpenUntil: 900, rateLimit: 2, nextSendAt: 1_200 }),
        10,
        policy
      )
    ).toBe(1_200)
  })

  it("at the in-flight limit, is when the first lease ends (a finished attempt wakes its own dispatcher)", () => {
    expect(nextClaimableAt(backlog({ inFlight: 2, firstLeaseEnd: 60_000 }), 10, policy)).toBe(60_000)
    // Half open with its probe in flight: the lease end, not the half-open time.
    expect(
      nextClaimableAt(
        backlog({ consecutiveFails: 6, circuitOpenUntil: 5, inFlight: 1, firstLeaseEnd: 70_000 }),
        10,
        policy
      )
    ).toBe(70_000)
    // Closed, in flight below the limit: the head, even with leases.
    expect(nextClaimableAt(backlog({ inFlight: 1, firstLeaseEnd: 60_000, headDueAt: 20 }), 10, policy)).toBe(
      20
    )
  })

  it("is none without a head or a lease; the earliest over many endpoints", () => {
    expect(nextClaimableAt(backlog({ headDueAt: null }), 10, policy)).toBeNull()
    expect(nextClaimableAt(backlog({ headDueAt: null, inFlight: 1, firstLeaseEnd: 99 }), 10, policy)).toBe(99)
    expect(earliestClaimableAt([], 10, policy)).toBeNull()
    expect(
      earliestClaimableAt(
        [
          backlog({ headDueAt: 300 }),
          backlog({ webhookId: "wh_b", consecutiveFails: 5, circuitOpenUntil: 200, headDueAt: 0 }),
          backlog({ webhookId: "wh_c", headDueAt: null })
        ],
        10,
        policy
      )
    ).toBe(200)
  })
})

describe("fair order", () => {
  const turn = (webhookId: string, workspaceId: string | null, headDueAt: number, count: number) => ({
    webhookId,
    workspaceId,
    headDueAt,
    attempts: Array.from({ length: count }, (_, i) => `${webhookId}#${i}`)
  })

  it("gives each endpoint's earliest in turn, the longest waiting first", () => {
    expect(fairOrder([turn("b", "w1", 5, 2), turn("a", "w2", 1, 3)], 10)).toEqual([
      "a#0",
      "b#0",
      "a#1",
      "b#1",
      "a#2"
    ])
  })

  it("alternates workspaces before endpoints: many endpoints of one workspace take one turn", () => {
    const many = ["e1", "e2", "e3", "e4"].map((id, i) => turn(id, "busy", i, 2))
    expect(fairOrder([...many, turn("solo", "quiet", 100, 3)], 6)).toEqual([
      "e1#0",
      "solo#0",
      "e2#0",
      "solo#1",
      "e3#0",
      "solo#2"
    ])
  })

  it("keeps an endpoint that is gone apart from every workspace; stops at the limit; skips empty turns", () => {
    expect(fairOrder([turn("x", null, 0, 2), turn("y", null, 1, 1), turn("z", "w", 2, 0)], 3)).toEqual([
      "x#0",
      "y#0",
      "x#1"
    ])
    expect(fairOrder([turn("a", "w", 0, 3)], 0)).toEqual([])
    expect(fairOrder([], 5)).toEqual([])
  })

  it("a backlog of 10,000 on one endpoint lets another's single attempt out first in line after one", () => {
    const order = fairOrder([turn("big", "w1", 0, 10_000), turn("small", "w2", 50, 1)], 2)
    expect(order).toEqual(["big#0", "small#0"])
  })
})

describe("claim plan", () => {
  const attempt = (webhookId: string, n: number) => ({ id: `${webhookId}-${n}`, webhookId })

  it("takes each endpoint's allowance of its waiting attempts, in the fair order, and moves rate limits", () => {
    const backlogs = [
      backlog({ webhookId: "a", workspaceId: "w1", headDueAt: 0 }),
      backlog({ webhookId: "b", workspaceId: "w2", headDueAt: 1, rateLimit: 4 }),
      backlog({ webhookId: "c", workspaceId: "w3", headDueAt: 2, consecutiveFails: 5, circuitOpenUntil: 999 })
    ]
    const waiting = (id: string) => [0, 1, 2, 3].map((n) => attempt(id, n))
    const plan = planClaim(backlogs, waiting, 10, 10, policy)
    expect(plan.attempts.map((a) => a.id)).toEqual(["a-0", "b-0", "a-1"])
    expect(plan.nextSendAt).toEqual([{ webhookId: "b", at: 10 + 250 }])
  })

  it("moves no rate limit for an endpoint the limit left out", () => {
    const backlogs = [
      backlog({ webhookId: "a", workspaceId: "w1", headDueAt: 0 }),
      backlog({ webhookId: "b", workspaceId: "w2", headDueAt: 5, rateLimit: 1 })
    ]
    const plan = planClaim(backlogs, (id) => [attempt(id, 0)], 10, 1, policy)
    expect(plan.attempts.map((a) => a.id)).toEqual(["a-0"])
    expect(plan.nextSendAt).toEqual([])
  })

  it("locks first the endpoints with something claimable, fairly ordered", () => {
    const backlogs = [
      backlog({ webhookId: "full", inFlight: 2, headDueAt: 0 }),
      backlog({ webhookId: "open", consecutiveFails: 5, circuitOpenUntil: 50, headDueAt: 0 }),
      backlog({ webhookId: "late", headDueAt: 20 }),
      backlog({ webhookId: "w2-first", workspaceId: "ws_2", headDueAt: 3 }),
      backlog({ webhookId: "ok", headDueAt: 1 })
    ]
    expect(endpointsToClaim(backlogs, 10, 10, policy)).toEqual(["ok", "w2-first"])
    expect(endpointsToClaim(backlogs, 10, 1, policy)).toEqual(["ok"])
  })
})
