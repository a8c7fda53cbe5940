/**
 * A request's log line (docs/operations.md, Request ids): what the pipeline learned of the
 * request (`RequestFacts`), written once per answer, and counted in the metrics from there.
 */
import { performance } from "node:perf_hooks"
import type { RateLimitDecision } from "@intake/domain/internal"
import type { IntakeMetrics } from "@intake/node"
import type { RequestLogWrite } from "@intake/node/internal"
import type { IncomingRequest } from "./request.js"
import type { RequestNotes } from "./routes.js"

/**
 * What the request log says beside the status, filled in along the pipeline as it learns
 * them (one plain object per request, no fiber-local state). The server reads it too: a
 * request cut by its deadline answers with the rate-limit headers of its decision.
 */
export interface RequestFacts extends RequestNotes {
  readonly requestId: string
  /** The matched route's pattern (/v1/intake-bots/:id), never the raw path. */
  route: string | undefined
  workspaceId: string | undefined
  keyId: string | undefined
  /** The rate-limit decision of a /v1 request, once taken. */
  decision: RateLimitDecision | undefined
}

/** The request's log line: ids and outcome only, never a header, a key or a body. */
export const requestLogLine = (
  request: IncomingRequest,
  facts: RequestFacts,
  status: number,
  startedAt: number
) => {
  const line = {
    message: "request",
    requestId: facts.requestId,
    method: request.method,
    route: facts.route ?? null,
    status,
    durationMs: Math.round((performance.now() - startedAt) * 100) / 100,
    workspaceId: facts.workspaceId ?? null,
    keyId: facts.keyId ?? null
  }
  // A create names what it stored: one id from its answer to its deliveries
  // (docs/operations.md, Request ids).
  return facts.submissionId === undefined
    ? line
    : { ...line, submissionId: facts.submissionId, eventIds: facts.eventIds ?? [] }
}

/**
 * The request log writer that also counts the request in the metrics (docs/operations.md,
 * Metrics): every answer writes its line once, the deadline's too, so requests are counted
 * in one place, from the line's own route template, method, status and duration.
 */
export const countedRequestLog =
  (metrics: IntakeMetrics, write: RequestLogWrite): RequestLogWrite =>
  (fields) => {
    const line = fields as ReturnType<typeof requestLogLine>
    metrics.observeRequest(line.route, line.method, line.status, line.durationMs / 1000)
    return write(fields)
  }
