/**
 * What each plan allows (docs/rules.md, Limits and rate limits; Operator API), and the workspace overrides an
 * operator may set. Other areas read limits only through these functions, so an override
 * is never forgotten.
 */
import type { Plan, Workspace } from "../shared/models.js"

export interface PlanLimits {
  /** Whether keys of the plan may call the public API at all. */
  readonly apiAccess: boolean
  /** Per key, in a sliding window of 60 seconds. */
  readonly requestsPerMinute: number
  /** Usable (not revoked, not expired) keys per workspace. */
  readonly maxApiKeys: number
  /** Submissions per workspace per UTC calendar month, test submissions included. */
  readonly monthlySubmissionQuota: number
  readonly maxWebhookEndpoints: number
}

export const planLimits: Readonly<Record<Plan, PlanLimits>> = {
  free: {
    apiAccess: false,
    requestsPerMinute: 0,
    maxApiKeys: 0,
    monthlySubmissionQuota: 0,
    maxWebhookEndpoints: 0
  },
  pro: {
    apiAccess: true,
    requestsPerMinute: 100,
    maxApiKeys: 3,
    monthlySubmissionQuota: 1_000,
    maxWebhookEndpoints: 10
  },
  business: {
    apiAccess: true,
    requestsPerMinute: 500,
    maxApiKeys: 10,
    monthlySubmissionQuota: 10_000,
    maxWebhookEndpoints: 50
  }
}

/** The rate-limit window of every key and of anonymous clients. */
export const RATE_LIMIT_WINDOW_MS = 60_000
/** Requests without a valid key, per client IP and window (docs/rules.md, Checks in order). */
export const ANONYMOUS_REQUESTS_PER_MINUTE = 100

export const hasApiAccess = (plan: Plan): boolean => planLimits[plan].apiAccess

export const maxApiKeys = (plan: Plan): number => planLimits[plan].maxApiKeys

/** Requests per key and minute: the workspace's override, else its plan's. */
export const requestsPerMinute = (workspace: Pick<Workspace, "plan" | "rateLimitPerMinute">): number =>
  workspace.rateLimitPerMinute ?? planLimits[workspace.plan].requestsPerMinute

/** Submissions per UTC calendar month: the workspace's override, else its plan's. */
export const monthlySubmissionQuota = (
  workspace: Pick<Workspace, "plan" | "monthlySubmissionQuota">
): number => workspace.monthlySubmissionQuota ?? planLimits[workspace.plan].monthlySubmissionQuota

export const maxWebhookEndpoints = (workspace: Pick<Workspace, "plan">): number =>
  planLimits[workspace.plan].maxWebhookEndpoints

/**
 * Why a workspace gets no webhook deliveries now, or null when it does (docs/choices.md):
 * an archived workspace gets none, nor one whose plan has no API access (Free). Attempts
 * already queued are closed unsent with this reason; new events queue none.
 */
export const deliveriesWithheld = (workspace: Pick<Workspace, "status" | "plan">): string | null =>
  workspace.status === "archived"
    ? "the workspace is archived"
    : hasApiAccess(workspace.plan)
      ? null
      : `the workspace's plan (${workspace.plan}) has no API access`
