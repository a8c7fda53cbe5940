/**
 * The client: one typed method per v1 operation, on the global `fetch`. Every request is
 * retried on 429 rate_limit_exceeded (after Retry-After, up to a bound), 5xx, network errors
 * and timeouts, with exponential backoff; a POST carries an Idempotency-Key (generated unless
 * given), the same on every retry, so a retried create never creates twice. Each attempt has
 * a timeout; a caller's AbortSignal cancels the call, the wait before a retry included.
 */

import { parseEnvelope, retryAfterSeconds } from "./envelope.js"
import { IntakeConnectionError, IntakeError, IntakeTimeoutError, IntakeUnexpectedResponse } from "./errors.js"
import { ListRequest, query } from "./list-request.js"
import {
  type Fetch,
  type FetchInit,
  linkedSignal,
  MAX_TIMER_MS,
  timerSleep,
  unlessAborted
} from "./transport.js"
import type {
  CreatedSubmission,
  CreateSubmissionBody,
  CreateWebhookBody,
  Deleted,
  Delivery,
  DeliveryListPage,
  DeliveryListParams,
  IntakeBot,
  IntakeBotListItem,
  IntakeBotListPage,
  ListParams,
  Pagination,
  RecoverWebhookBody,
  Recovery,
  RotateWebhookSecretBody,
  Submission,
  SubmissionListItem,
  SubmissionListPage,
  SubmissionListParams,
  UpdateWebhookBody,
  Webhook,
  WebhookListPage,
  WebhookWithSecret
} from "./types.js"
import { VERSION } from "./version.js"

/** Why a request is retried. */
export type RetryReason =
  /** The request failed before an answer (connection refused or reset, DNS). */
  | "network_error"
  /** No whole answer within `timeoutMs`. */
  | "timeout"
  /** A 5xx answer. */
  | "server_error"
  /** A 429 `rate_limit_exceeded`: the delay is its Retry-After. */
  | "rate_limited"

/** What `onRetry` is told before each retry. */
export interface RetryInfo {
  /** The retry about to be made: 1 before the first retry (the second attempt), and so on. */
  readonly attempt: number
  /** How long the client waits before it, in milliseconds. */
  readonly delayMs: number
  readonly reason: RetryReason
  /** The failure of the attempt being retried. */
  readonly error: IntakeError | IntakeConnectionError | IntakeUnexpectedResponse
  readonly method: string
  /** The path and query, as `/v1/webhooks?limit=10`. */
  readonly path: string
}

export interface IntakeClientOptions {
  /** `svc_live_…` */
  readonly apiKey: string
  /** Where the API is served, without `/v1` (default `http://localhost:3000`). */
  readonly baseUrl?: string
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  readonly maxRetries?: number
  /** The first backoff delay in milliseconds, doubled each retry, with jitter (default 500). */
  readonly retryDelayMs?: number
  /**
   * The longest Retry-After (seconds) a 429 `rate_limit_exceeded` is waited for (default 60);
   * past it the 429 is thrown at once as an IntakeError. 0 never waits on a 429.
   */
  readonly maxRetryAfterSeconds?: number
  /**
   * How long each attempt may take, answer body included, in milliseconds (default 60000);
   * then it is aborted and retried like a network error, and the last one throws
   * IntakeTimeoutError. `Infinity` waits for ever.
   */
  readonly timeoutMs?: number
  /** Cancels every call of this client (each rejects with the signal's reason). */
  readonly signal?: AbortSignal
  /**
   * Sent as User-Agent (default `intake-client/<version>`, except in a browser, which sends
   * its own: a script's User-Agent would need a CORS preflight that Intake's CORS does not allow).
   */
  readonly userAgent?: string
  /** Called before each retry; an exception it throws rejects the call instead of retrying. */
  readonly onRetry?: (retry: RetryInfo) => void
  readonly fetch?: Fetch
  /**
   * How the client waits before a retry (default: a timer); it must reject with the signal's
   * reason when the signal aborts. For tests, and for schedulers of your own.
   */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>
}

/** Per call: overrides of the client's options. */
export interface RequestOptions {
  /** Cancels this call: the request in flight and any wait before a retry. */
  readonly signal?: AbortSignal
  /** This call's `timeoutMs` (each attempt's), instead of the client's. */
  readonly timeoutMs?: number
}

export interface PostOptions extends RequestOptions {
  /** Sent as Idempotency-Key; a random UUID when omitted. Reused on every retry. */
  readonly idempotencyKey?: string
}

const MAX_BACKOFF_MS = 8_000
const DEFAULT_TIMEOUT_MS = 60_000
/**
 * Whether this runs in a browser (or a browser's worker): their navigator.userAgent starts
 * with "Mozilla/", where Node 21+, Deno, Bun and edge runtimes name themselves.
 */
const inBrowser = (): boolean => {
  const userAgent = (globalThis as { readonly navigator?: { readonly userAgent?: unknown } }).navigator
    ?.userAgent
  return typeof userAgent === "string" && userAgent.startsWith("Mozilla/")
}

/** A count of milliseconds or seconds an option may hold: a number, 0 or more (`Infinity` where allowed). */
const checkedOption = (name: string, value: number, allowInfinity: boolean, min = 0): number => {
  if (Number.isNaN(value) || value < min || (!allowInfinity && !Number.isFinite(value)))
    throw new RangeError(`${name} must be a number of at least ${min} (got ${value})`)
  return value
}

const segment = encodeURIComponent

export class IntakeClient {
  readonly #apiKey: string
  readonly #baseUrl: string
  readonly #maxRetries: number
  readonly #retryDelayMs: number
  readonly #maxRetryAfterSeconds: number
  readonly #timeoutMs: number
  readonly #signal: AbortSignal | undefined
  readonly #userAgent: string | undefined
  readonly #onRetry: ((retry: RetryInfo) => void) | undefined
  readonly #fetch: Fetch
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>

  constructor(options: IntakeClientOptions) {
    this.#apiKey = options.apiKey
    this.#baseUrl = (options.baseUrl ?? "http://localhost:3000").replace(/\/+$/, "")
    this.#maxRetries = checkedOption("maxRetries", options.maxRetries ?? 2, false)
    this.#retryDelayMs = checkedOption("retryDelayMs", options.retryDelayMs ?? 500, false)
    this.#maxRetryAfterSeconds = checkedOption(
      "maxRetryAfterSeconds",
      options.maxRetryAfterSeconds ?? 60,
      true
    )
    this.#timeoutMs = checkedOption("timeoutMs", options.timeoutMs ?? DEFAULT_TIMEOUT_MS, true, 1)
    this.#signal = options.signal
    this.#userAgent = options.userAgent ?? (inBrowser() ? undefined : `intake-client/${VERSION}`)
    this.#onRetry = options.onRetry
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init))
    this.#sleep = options.sleep ?? timerSleep
  }

  // ---------------------------------------------------------------- intake bots

  listIntakeBots(
    params: ListParams = {},
    options: RequestOptions = {}
  ): ListRequest<IntakeBotListPage, IntakeBotListItem> {
    return this.#list("/v1/intake-bots", params, options, (page: IntakeBotListPage) => page.intake_bots)
  }

  async getIntakeBot(id: string, options: RequestOptions = {}): Promise<IntakeBot> {
    const path = `/v1/intake-bots/${segment(id)}`
    return (await this.#request<{ intake_bot: IntakeBot }>("GET", path, undefined, options)).intake_bot
  }

  // ---------------------------------------------------------------- submissions

  listSubmissions(
    botId: string,
    params: SubmissionListParams = {},
    options: RequestOptions = {}
  ): ListRequest<SubmissionListPage, SubmissionListItem> {
    return this.#list(
      `/v1/intake-bots/${segment(botId)}/submissions`,
      params,
      options,
      (page: SubmissionListPage) => page.submissions
    )
  }

  async getSubmission(
    botId: string,
    submissionId: string,
    options: RequestOptions = {}
  ): Promise<Submission> {
    const path = `/v1/intake-bots/${segment(botId)}/submissions/${segment(submissionId)}`
    return (await this.#request<{ submission: Submission }>("GET", path, undefined, options)).submission
  }

  async createSubmission(
    botId: string,
    body: CreateSubmissionBody,
    options: PostOptions = {}
  ): Promise<CreatedSubmission> {
    const path = `/v1/intake-bots/${segment(botId)}/submissions`
    return (await this.#request<{ submission: CreatedSubmission }>("POST", path, body, options)).submission
  }

  // ---------------------------------------------------------------- webhooks

  listWebhooks(params: ListParams = {}, options: RequestOptions = {}): ListRequest<WebhookListPage, Webhook> {
    return this.#list("/v1/webhooks", params, options, (page: WebhookListPage) => page.webhooks)
  }

  async getWebhook(id: string, options: RequestOptions = {}): Promise<Webhook> {
    const path = `/v1/webhooks/${segment(id)}`
    return (await this.#request<{ webhook: Webhook }>("GET", path, undefined, options)).webhook
  }

  /** The answer carries the signing secret, shown this once. */
  async createWebhook(body: CreateWebhookBody, options: PostOptions = {}): Promise<WebhookWithSecret> {
    return (await this.#request<{ webhook: WebhookWithSecret }>("POST", "/v1/webhooks", body, options))
      .webhook
  }

  async updateWebhook(id: string, body: UpdateWebhookBody, options: RequestOptions = {}): Promise<Webhook> {
    const path = `/v1/webhooks/${segment(id)}`
    return (await this.#request<{ webhook: Webhook }>("PATCH", path, body, options)).webhook
  }

  async deleteWebhook(id: string, options: RequestOptions = {}): Promise<Deleted> {
    return this.#request<Deleted>("DELETE", `/v1/webhooks/${segment(id)}`, undefined, options)
  }

  /**
   * A new signing secret, shown this once; the old one keeps signing beside it for the
   * grace period (24 h unless `body.grace_period_seconds` says).
   */
  async rotateWebhookSecret(
    id: string,
    body: RotateWebhookSecretBody = {},
    options: PostOptions = {}
  ): Promise<WebhookWithSecret> {
    return (
      await this.#request<{ webhook: WebhookWithSecret }>(
        "POST",
        `/v1/webhooks/${segment(id)}/secret/rotate`,
        body,
        options
      )
    ).webhook
  }

  // ---------------------------------------------------------------- deliveries

  async testWebhook(id: string, options: PostOptions = {}): Promise<Delivery> {
    return (
      await this.#request<{ delivery: Delivery }>(
        "POST",
        `/v1/webhooks/${segment(id)}/test`,
        undefined,
        options
      )
    ).delivery
  }

  listDeliveries(
    webhookId: string,
    params: DeliveryListParams = {},
    options: RequestOptions = {}
  ): ListRequest<DeliveryListPage, Delivery> {
    return this.#list(
      `/v1/webhooks/${segment(webhookId)}/deliveries`,
      params,
      options,
      (page: DeliveryListPage) => page.deliveries
    )
  }

  async getDelivery(webhookId: string, deliveryId: string, options: RequestOptions = {}): Promise<Delivery> {
    const path = `/v1/webhooks/${segment(webhookId)}/deliveries/${segment(deliveryId)}`
    return (await this.#request<{ delivery: Delivery }>("GET", path, undefined, options)).delivery
  }

  /** Queues again the events of the window this endpoint has not received (it must be active). */
  async recoverWebhook(
    webhookId: string,
    body: RecoverWebhookBody,
    options: PostOptions = {}
  ): Promise<Recovery> {
    const path = `/v1/webhooks/${segment(webhookId)}/recover`
    return (await this.#request<{ recovery: Recovery }>("POST", path, body, options)).recovery
  }

  async redeliver(webhookId: string, deliveryId: string, options: PostOptions = {}): Promise<Delivery> {
    const path = `/v1/webhooks/${segment(webhookId)}/deliveries/${segment(deliveryId)}/redeliver`
    return (await this.#request<{ delivery: Delivery }>("POST", path, undefined, options)).delivery
  }

  // ---------------------------------------------------------------- the one request path

  #list<Page extends { readonly pagination: Pagination }, Item>(
    path: string,
    params: DeliveryListParams,
    options: RequestOptions,
    itemsOf: (page: Page) => ReadonlyArray<Item>
  ): ListRequest<Page, Item> {
    const { cursor, ...rest } = params
    return new ListRequest(
      (next) =>
        this.#request<Page>(
          "GET",
          `${path}${query(next === undefined ? rest : { ...rest, cursor: next })}`,
          undefined,
          options
        ),
      itemsOf,
      cursor
    )
  }

  async #request<T>(method: string, path: string, body?: unknown, options: PostOptions = {}): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: "application/json"
    }
    if (this.#userAgent !== undefined) headers["user-agent"] = this.#userAgent
    if (body !== undefined) headers["content-type"] = "application/json"
    // One key for every attempt: a retry after a lost answer replays it instead of creating twice.
    if (method === "POST") headers["idempotency-key"] = options.idempotencyKey ?? crypto.randomUUID()
    const timeoutMs =
      options.timeoutMs === undefined
        ? this.#timeoutMs
        : checkedOption("timeoutMs", options.timeoutMs, true, 1)
    const call = linkedSignal([this.#signal, options.signal])
    try {
      for (let attempt = 0; ; attempt++) {
        const outcome = await this.#attempt(method, path, body, headers, timeoutMs, call.signal)
        if (outcome.done) return outcome.data as T
        const delayMs = this.#retryDelay(outcome, attempt)
        if (delayMs === undefined || outcome.reason === undefined) throw outcome.error
        this.#onRetry?.({
          attempt: attempt + 1,
          delayMs,
          reason: outcome.reason,
          error: outcome.error,
          method,
          path
        })
        await this.#sleep(delayMs, call.signal)
        if (call.signal.aborted) throw call.signal.reason
      }
    } finally {
      call.release()
    }
  }

  /** How long to wait before retrying a failed attempt, or undefined when it is not retried. */
  #retryDelay(failure: Failure, attempt: number): number | undefined {
    if (attempt >= this.#maxRetries || failure.reason === undefined) return undefined
    if (failure.reason === "rate_limited") {
      if (failure.retryAfterSeconds === undefined) return this.#backoff(attempt)
      return failure.retryAfterSeconds <= this.#maxRetryAfterSeconds
        ? failure.retryAfterSeconds * 1000
        : undefined
    }
    return this.#backoff(attempt)
  }

  #backoff(attempt: number): number {
    const ceiling = Math.min(MAX_BACKOFF_MS, this.#retryDelayMs * 2 ** attempt)
    return ceiling / 2 + Math.random() * (ceiling / 2)
  }

  /** One attempt: its data, or its failure and whether (why) it may be retried. */
  async #attempt(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    timeoutMs: number,
    callSignal: AbortSignal
  ): Promise<{ readonly done: true; readonly data: unknown } | Failure> {
    if (callSignal.aborted) throw callSignal.reason
    const attempt = linkedSignal([callSignal])
    // A timeout past what a timer keeps is no timeout at all (as Infinity).
    const timer =
      timeoutMs <= MAX_TIMER_MS
        ? setTimeout(
            () =>
              attempt.controller.abort(
                new IntakeTimeoutError(`${method} ${path}: no answer within ${timeoutMs} ms`, timeoutMs)
              ),
            timeoutMs
          )
        : undefined
    const init: FetchInit = {
      method,
      headers,
      signal: attempt.signal,
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    }
    let status: number
    let requestId: string | null
    let retryAfter: string | null
    let text: string
    try {
      // Raced against the signal too, so a fetch that ignores it is not waited for.
      const response = await unlessAborted(this.#fetch(`${this.#baseUrl}${path}`, init), attempt.signal)
      status = response.status
      requestId = response.headers.get("x-request-id")
      retryAfter = response.headers.get("retry-after")
      text = await unlessAborted(response.text(), attempt.signal)
    } catch (cause) {
      // The caller's abort ends the call as fetch does: rejected with the signal's reason.
      if (callSignal.aborted) throw callSignal.reason
      if (attempt.signal.aborted && attempt.signal.reason instanceof IntakeTimeoutError)
        return { done: false, reason: "timeout", error: attempt.signal.reason }
      const error = new IntakeConnectionError(`${method} ${path} failed: ${String(cause)}`, { cause })
      return { done: false, reason: "network_error", error }
    } finally {
      clearTimeout(timer)
      attempt.release()
    }
    const envelope = parseEnvelope(text)
    if (envelope === undefined) {
      const error = new IntakeUnexpectedResponse(status, text)
      return { done: false, reason: status >= 500 ? "server_error" : undefined, error }
    }
    if (envelope.success) return { done: true, data: envelope.data }
    const error = new IntakeError(status, envelope.error, requestId)
    if (status >= 500) return { done: false, reason: "server_error", error }
    if (envelope.error.code === "rate_limit_exceeded") {
      const seconds = retryAfterSeconds(retryAfter, Date.now()) ?? envelope.error.details?.retry_after
      return {
        done: false,
        reason: "rate_limited",
        error,
        retryAfterSeconds: typeof seconds === "number" && Number.isFinite(seconds) ? seconds : undefined
      }
    }
    return { done: false, reason: undefined, error }
  }
}

/** An attempt that failed: `reason` says why it may be retried (undefined: it may not). */
interface Failure {
  readonly done: false
  readonly reason: RetryReason | undefined
  readonly error: IntakeError | IntakeConnectionError | IntakeUnexpectedResponse
  /** For a 429: its Retry-After (or `details.retry_after`), when it had one. */
  readonly retryAfterSeconds?: number | undefined
}
