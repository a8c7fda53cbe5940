/**
 * Isolation of webhook endpoints from one another (docs/webhooks.md, "Isolation"): how
 * many attempts of one endpoint may be in flight at once, its circuit breaker, its
 * optional rate limit, and the fair order in which a claim hands out the due attempts of
 * many endpoints and workspaces. Pure rules: the stores apply them inside their claim,
 * atomically per endpoint.
 */

export interface IsolationPolicy {
  /** WEBHOOK_ENDPOINT_CONCURRENCY: attempts of one endpoint in flight at once, across every dispatcher. */
  readonly maxInFlight: number
  /** WEBHOOK_CIRCUIT_FAILURES: consecutive failed attempts (timeouts included) that open the circuit. */
  readonly circuitFailures: number
  /** WEBHOOK_CIRCUIT_COOLDOWN: how long the circuit first stays open. */
  readonly cooldownMs: number
  /** WEBHOOK_CIRCUIT_COOLDOWN_MAX: the longest it stays open (it stays open as long as the endpoint has been failing). */
  readonly maxCooldownMs: number
}

export const DEFAULT_ISOLATION: IsolationPolicy = {
  maxInFlight: 8,
  circuitFailures: 5,
  cooldownMs: 30_000,
  maxCooldownMs: 3_600_000
}

/** Deliveries per second an endpoint may ask for (`rate_limit`); null is unlimited. */
export const MIN_RATE_LIMIT = 1
export const MAX_RATE_LIMIT = 1000

export const rateLimitIssues = (value: unknown): ReadonlyArray<{ path: string; message: string }> =>
  value === null ||
  (typeof value === "number" && Number.isInteger(value) && value >= MIN_RATE_LIMIT && value <= MAX_RATE_LIMIT)
    ? []
    : [
        {
          path: "rate_limit",
          message: `must be a whole number of deliveries per second from ${MIN_RATE_LIMIT} to ${MAX_RATE_LIMIT}, or null`
        }
      ]

// ---------------------------------------------------------------- circuit breaker

export type CircuitState = "closed" | "open" | "half_open"

/** The part of an endpoint the breaker reads: `circuitOpenUntil` is set while it is not closed. */
export interface CircuitFields {
  readonly consecutiveFails: number
  readonly circuitOpenUntil: number | null
}

/**
 * closed: attempts flow. open (until `circuitOpenUntil`): no attempt is claimed; they stay
 * queued. half_open (from then on): one probe at a time; its success closes the circuit,
 * its failure opens it again for longer.
 */
export const circuitState = (endpoint: CircuitFields, now: number): CircuitState =>
  endpoint.circuitOpenUntil === null ? "closed" : now < endpoint.circuitOpenUntil ? "open" : "half_open"

/**
 * How long the circuit stays open when the endpoint has been failing for `failingForMs`:
 * as long again (so each failed probe about doubles the wait), at least the cool-down, at
 * most the maximum. Counting time rather than failures, the attempts that were in flight
 * when the circuit opened do not stretch it when they fail too.
 */
export const cooldownMs = (failingForMs: number, policy: IsolationPolicy): number =>
  Math.min(policy.maxCooldownMs, Math.max(policy.cooldownMs, failingForMs))

/**
 * `circuitOpenUntil` after an attempt that finished at `finishedAt`, given the endpoint's
 * failure streak counted with it (`consecutiveFails`, failing since `failingSince`): a
 * success closes the circuit; a failure at or past the threshold opens it from then.
 */
export const circuitAfterAttempt = (
  outcome: {
    readonly ok: boolean
    readonly consecutiveFails: number
    readonly failingSince: number | null
    readonly finishedAt: number
  },
  policy: IsolationPolicy
): number | null =>
  outcome.ok || outcome.consecutiveFails < policy.circuitFailures
    ? null
    : outcome.finishedAt +
      cooldownMs(outcome.finishedAt - (outcome.failingSince ?? outcome.finishedAt), policy)

// ---------------------------------------------------------------- rate limit

/** Milliseconds between two sends at `rateLimit` per second, rounded up so the rate is never exceeded. */
export const sendSpacingMs = (rateLimit: number): number => Math.ceil(1000 / rateLimit)

// ---------------------------------------------------------------- claims

/** What a store knows of one endpoint's queue when it claims: the policies' input. */
export interface EndpointBacklog {
  readonly webhookId: string
  /** null when the endpoint is gone (its attempts are claimed to be closed as not sent). */
  readonly workspaceId: string | null
  readonly consecutiveFails: number
  readonly circuitOpenUntil: number | null
  readonly rateLimit: number | null
  /** The earliest moment the rate limit lets the next send start; null when never sent under it. */
  readonly nextSendAt: number | null
  /** Claimed attempts whose lease has not ended. */
  readonly inFlight: number
  /** When the earliest waiting (unclaimed, or lease ended) attempt is due; null when none waits. */
  readonly headDueAt: number | null
  /** When the first of the in-flight leases ends; null when none is in flight. */
  readonly firstLeaseEnd: number | null
}

const inFlightCap = (backlog: EndpointBacklog, now: number, policy: IsolationPolicy): number => {
  switch (circuitState(backlog, now)) {
    case "open":
      return 0
    case "half_open":
      return 1
    case "closed":
      return policy.maxInFlight
  }
}

/**
 * How many of the endpoint's due attempts a claim at `now` may take: none while its
 * circuit is open or its rate limit makes it wait; otherwise what its in-flight limit
 * leaves (one probe when half open), and one at a time under a rate limit, so that sends
 * are spaced.
 */
export const claimAllowance = (backlog: EndpointBacklog, now: number, policy: IsolationPolicy): number => {
  if (backlog.headDueAt === null || backlog.headDueAt > now) return 0
  const room = Math.max(0, inFlightCap(backlog, now, policy) - backlog.inFlight)
  if (backlog.rateLimit === null) return room
  return backlog.nextSendAt !== null && backlog.nextSendAt > now ? 0 : Math.min(room, 1)
}

/** The rate limit's next allowed send after a claim at `now` took `taken` attempts; unchanged when none. */
export const nextSendAfterClaim = (backlog: EndpointBacklog, now: number, taken: number): number | null =>
  backlog.rateLimit === null || taken === 0
    ? backlog.nextSendAt
    : now + taken * sendSpacingMs(backlog.rateLimit)

/**
 * The earliest moment a claim could take something of this endpoint that it cannot take
 * at `now` (the dispatcher sleeps until then): its head comes due, its circuit half opens,
 * its rate limit lets the next send go, or a lease ends. An endpoint at its in-flight
 * limit waits for a lease to end; a finished attempt frees its slot earlier, and the
 * dispatcher that made it looks again at once. null when nothing of it will be claimable.
 */
export const nextClaimableAt = (
  backlog: EndpointBacklog,
  now: number,
  policy: IsolationPolicy
): number | null => {
  const candidates: Array<number> = []
  if (backlog.firstLeaseEnd !== null) candidates.push(backlog.firstLeaseEnd)
  if (backlog.headDueAt !== null) {
    const at = Math.max(
      backlog.headDueAt,
      backlog.circuitOpenUntil ?? Number.NEGATIVE_INFINITY,
      backlog.rateLimit === null ? Number.NEGATIVE_INFINITY : (backlog.nextSendAt ?? Number.NEGATIVE_INFINITY)
    )
    // At that moment the circuit is closed or half open; is there room in flight then?
    if (backlog.inFlight < inFlightCap(backlog, Math.max(at, now), policy)) candidates.push(at)
  }
  return candidates.length === 0 ? null : Math.min(...candidates)
}

/** The earliest `nextClaimableAt` of all the backlogs. */
export const earliestClaimableAt = (
  backlogs: ReadonlyArray<EndpointBacklog>,
  now: number,
  policy: IsolationPolicy
): number | null => {
  let earliest: number | null = null
  for (const backlog of backlogs) {
    const at = nextClaimableAt(backlog, now, policy)
    if (at !== null && (earliest === null || at < earliest)) earliest = at
  }
  return earliest
}

/** One endpoint's claimable attempts, earliest due first, as the fair order takes them. */
export interface EndpointTurn<A> {
  readonly webhookId: string
  readonly workspaceId: string | null
  /** When the first of `attempts` is due. */
  readonly headDueAt: number
  readonly attempts: ReadonlyArray<A>
}

const byHead = <T extends { readonly headDueAt: number; readonly key: string }>(a: T, b: T) =>
  a.headDueAt - b.headDueAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

/** Takes one item from each list in turn (the first list first), until all are empty. */
const roundRobin = <A>(lists: ReadonlyArray<ReadonlyArray<A>>): Array<A> => {
  const out: Array<A> = []
  const longest = Math.max(0, ...lists.map((list) => list.length))
  for (let i = 0; i < longest; i++) for (const list of lists) if (i < list.length) out.push(list[i]!)
  return out
}

/**
 * The order in which a claim hands out the attempts of many endpoints, at most `limit`:
 * workspaces take turns (the one waiting longest first), and within a workspace its
 * endpoints take turns, each giving its earliest due attempt per turn. So one endpoint's
 * backlog, or one workspace's many endpoints, cannot keep the others waiting.
 */
export const fairOrder = <A>(turns: ReadonlyArray<EndpointTurn<A>>, limit: number): Array<A> => {
  const byWorkspace = new Map<string, Array<EndpointTurn<A>>>()
  for (const turn of turns) {
    if (turn.attempts.length === 0) continue
    // An endpoint that is gone is a workspace of its own: its attempts only need closing.
    const key = turn.workspaceId ?? `\u0000${turn.webhookId}`
    const group = byWorkspace.get(key)
    if (group === undefined) byWorkspace.set(key, [turn])
    else group.push(turn)
  }
  const workspaces = [...byWorkspace.entries()]
    .map(([key, group]) => {
      const endpoints = group
        .map((turn) => ({ ...turn, key: turn.webhookId }))
        .sort(byHead)
        .map((turn) => turn.attempts)
      return {
        key,
        headDueAt: Math.min(...group.map((turn) => turn.headDueAt)),
        sequence: roundRobin(endpoints)
      }
    })
    .sort(byHead)
  return roundRobin(workspaces.map((workspace) => workspace.sequence)).slice(0, Math.max(0, limit))
}

/**
 * The endpoints a claim of at most `limit` attempts looks at first, in the fair order of
 * their waiting heads (a store locks these): those with something claimable now, one per
 * workspace per turn, at most `limit` of them.
 */
export const endpointsToClaim = (
  backlogs: ReadonlyArray<EndpointBacklog>,
  now: number,
  limit: number,
  policy: IsolationPolicy
): Array<string> =>
  fairOrder(
    backlogs.flatMap((backlog) =>
      claimAllowance(backlog, now, policy) > 0 && backlog.headDueAt !== null
        ? [
            {
              webhookId: backlog.webhookId,
              workspaceId: backlog.workspaceId,
              headDueAt: backlog.headDueAt,
              attempts: [backlog.webhookId]
            }
          ]
        : []
    ),
    limit
  )

/** What one claim takes, in hand-out order, and the rate limits' next allowed sends it moves. */
export interface ClaimPlan<A> {
  readonly attempts: Array<A>
  readonly nextSendAt: Array<{ readonly webhookId: string; readonly at: number }>
  /**
   * Whether due attempts were left waiting (an endpoint's allowance or the claim's limit
   * stopped it): a dispatcher then claims again as soon as a slot frees, and otherwise waits
   * for new events or the next due time.
   */
  readonly more: boolean
}

/**
 * A claim of at most `limit` attempts at `now` over the endpoints' backlogs: from each, as
 * many of its waiting due attempts (`waiting`, earliest due first) as its allowance
 * lets, in the fair order.
 */
export const planClaim = <A extends { readonly webhookId: string }>(
  backlogs: ReadonlyArray<EndpointBacklog>,
  waiting: (webhookId: string) => ReadonlyArray<A>,
  now: number,
  limit: number,
  policy: IsolationPolicy
): ClaimPlan<A> => {
  const turns: Array<EndpointTurn<A>> = []
  for (const backlog of backlogs) {
    const allowance = claimAllowance(backlog, now, policy)
    if (allowance === 0 || backlog.headDueAt === null) continue
    const attempts = waiting(backlog.webhookId).slice(0, allowance)
    if (attempts.length > 0)
      turns.push({
        webhookId: backlog.webhookId,
        workspaceId: backlog.workspaceId,
        headDueAt: backlog.headDueAt,
        attempts
      })
  }
  const attempts = fairOrder(turns, limit)
  const taken = new Map<string, number>()
  for (const attempt of attempts) taken.set(attempt.webhookId, (taken.get(attempt.webhookId) ?? 0) + 1)
  const more = backlogs.some(
    (backlog) =>
      backlog.headDueAt !== null &&
      backlog.headDueAt <= now &&
      waiting(backlog.webhookId).length > (taken.get(backlog.webhookId) ?? 0)
  )
  const nextSendAt = backlogs.flatMap((backlog) => {
    const count = taken.get(backlog.webhookId) ?? 0
    const at = nextSendAfterClaim(backlog, now, count)
    return backlog.rateLimit !== null && count > 0 && at !== null
      ? [{ webhookId: backlog.webhookId, at }]
      : []
  })
  return { attempts, nextSendAt, more }
}
