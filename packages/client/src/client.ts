/**
 * The client: one typed method per v1 operation, on the global `fetch`. Every request is
 * retried on 429 rate_limit_exceeded (after Retry-After), 5xx and network errors, with
 * exponential backoff; a POST carries an Idempotency-Key (generated unless given), the same
 * on every retry, so a retried create never creates twice.
 */
import { IntakeConnectionError, IntakeError, IntakeUnexpectedResponse } from "./errors.js"
import type {
  ApiError,
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

/** Each v1 operation: its method and path (checked against the contract in a test). */
export const operations = {
  listIntakeBots: { method: "GET", path: "/v1/intake-bots" },
  getIntakeBot: { method: "GET", path: "/v1/intake-bots/:id" },
  listSubmissions: { method: "GET", path: "/v1/intake-bots/:id/submissions" },
  getSubmission: { method: "GET", path: "/v1/intake-bots/:id/submissions/:submissionId" },
  createSubmission: { method: "POST", path: "/v1/intake-bots/:id/submissions" },
  listWebhooks: { method: "GET", path: "/v1/webhooks" },
  getWebhook: { method: "GET", path: "/v1/webhooks/:id" },
  createWebhook: { method: "POST", path: "/v1/webhooks" },
  updateWebhook: { method: "PATCH", path: "/v1/webhooks/:id" },
  deleteWebhook: { method: "DELETE", path: "/v1/webhooks/:id" },
  rotateWebhookSecret: { method: "POST", path: "/v1/webhooks/:id/secret/rotate" },
  testWebhook: { method: "POST", path: "/v1/webhooks/:id/test" },
  listDeliveries: { method: "GET", path: "/v1/webhooks/:id/deliveries" },
  getDelivery: { method: "GET", path: "/v1/webhooks/:id/deliveries/:deliveryId" },
  redeliver: { method: "POST", path: "/v1/webhooks/:id/deliveries/:deliveryId/redeliver" },
  recoverWebhook: { method: "POST", path: "/v1/webhooks/:id/recover" }
} as const

export type OperationName = keyof typeof operations

/** The part of a fetch answer the client reads. */
export interface FetchResponse {
  readonly status: number
  readonly headers: { readonly get: (name: string) => string | null }
  readonly text: () => Promise<string>
}

/** The global fetch, or any function of the same shape (a test double, a proxy agent). */
export type Fetch = (
  url: string,
  init: { readonly method: string; readonly headers: Record<string, string>; readonly body?: string }
) => Promise<FetchResponse>

export interface IntakeClientOptions {
  /** `svc_live_…` */
  readonly apiKey: string
  /** Where the API is served, without `/v1` (default `http://localhost:3000`). */
  readonly baseUrl?: string
  /** Retries after the first attempt (default 2; 0 turns retrying off). */
  readonly maxRetries?: number
  /** The first backoff delay in milliseconds, doubled each retry, with jitter (default 500). */
  readonly retryDelayMs?: number
  /** A Retry-After longer than this (seconds) is not waited for: the 429 is thrown (default 60). */
  readonly maxRetryAfterSeconds?: number
  readonly fetch?: Fetch
}

export interface PostOptions {
  /** Sent as Idempotency-Key; a random UUID when omitted. Reused on every retry. */
  readonly idempotencyKey?: string
}

const MAX_BACKOFF_MS = 8_000

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Retry-After in seconds (a number of seconds, or an HTTP date). */
const retryAfterSeconds = (value: string | null, now: number): number | undefined => {
  if (value === null) return undefined
  if (/^[0-9]+$/.test(value.trim())) return Number(value.trim())
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000))
}

const isApiError = (value: unknown): value is ApiError =>
  typeof value === "object" &&
  value !== null &&
  "code" in value &&
  typeof value.code === "string" &&
  "message" in value &&
  typeof value.message === "string"

const parseEnvelope = (
  text: string
):
  | { readonly success: true; readonly data: unknown }
  | { readonly success: false; readonly error: ApiError }
  | undefined => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof body !== "object" || body === null || !("success" in body)) return undefined
  if (body.success === true && "data" in body) return { success: true, data: body.data }
  if (body.success === false && "error" in body && isApiError(body.error))
    return { success: false, error: body.error }
  return undefined
}

/**
 * A list call: `await` it for the first page, or `for await` over it for every item of every
 * page (it follows `next_cursor` until `has_more` is false). `pages()` iterates the pages.
 */
export class ListRequest<Page extends { readonly pagination: Pagination }, Item>
  implements PromiseLike<Page>, AsyncIterable<Item>
{
  #first: Promise<Page> | undefined
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page>,
    private readonly itemsOf: (page: Page) => ReadonlyArray<Item>,
    private readonly cursor: string | undefined
  ) {}

  // biome-ignore lint/suspicious/noThenProperty: a list call is awaited for its first page, by design
  then<A = Page, B = never>(
    onFulfilled?: ((page: Page) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null
  ): Promise<A | B> {
    this.#first ??= this.fetchPage(this.cursor)
    return this.#first.then(onFulfilled, onRejected)
  }

  async *pages(): AsyncGenerator<Page, void, undefined> {
    let cursor = this.cursor
    for (;;) {
      const page = await this.fetchPage(cursor)
      yield page
      if (!page.pagination.has_more || page.pagination.next_cursor === null) return
      cursor = page.pagination.next_cursor
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* this.itemsOf(page)
  }
}

const query = (params: DeliveryListParams) => {
  const entries = Object.entries(params).flatMap(
    ([name, value]): Array<[string, string]> => (value === undefined ? [] : [[name, String(value)]])
  )
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries).toString()}`
}

const segment = encodeURIComponent

export class IntakeClient {
  readonly #apiKey: string
  readonly #baseUrl: string
  readonly #maxRetries: number
  readonly #retryDelayMs: number
  readonly #maxRetryAfterSeconds: number
  readonly #fetch: Fetch

  constructor(options: IntakeClientOptions) {
    this.#apiKey = options.apiKey
    this.#baseUrl = (options.baseUrl ?? "http://localhost:3000").replace(/\/+$/, "")
    this.#maxRetries = options.maxRetries ?? 2
    this.#retryDelayMs = options.retryDelayMs ?? 500
    this.#maxRetryAfterSeconds = options.maxRetryAfterSeconds ?? 60
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init))
  }

  // ---------------------------------------------------------------- intake bots

  listIntakeBots(params: ListParams = {}): ListRequest<IntakeBotListPage, IntakeBotListItem> {
    return this.#list("/v1/intake-bots", params, (page: IntakeBotListPage) => page.intake_bots)
  }

  async getIntakeBot(id: string): Promise<IntakeBot> {
    return (await this.#request<{ intake_bot: IntakeBot }>("GET", `/v1/intake-bots/${segment(id)}`))
      .intake_bot
  }

  // ---------------------------------------------------------------- submissions

  listSubmissions(
    botId: string,
    params: SubmissionListParams = {}
  ): ListRequest<SubmissionListPage, SubmissionListItem> {
    return this.#list(
      `/v1/intake-bots/${segment(botId)}/submissions`,
      params,
      (page: SubmissionListPage) => page.submissions
    )
  }

  async getSubmission(botId: string, submissionId: string): Promise<Submission> {
    const path = `/v1/intake-bots/${segment(botId)}/submissions/${segment(submissionId)}`
    return (await this.#request<{ submission: Submission }>("GET", path)).submission
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

  listWebhooks(params: ListParams = {}): ListRequest<WebhookListPage, Webhook> {
    return this.#list("/v1/webhooks", params, (page: WebhookListPage) => page.webhooks)
  }

  async getWebhook(id: string): Promise<Webhook> {
    return (await this.#request<{ webhook: Webhook }>("GET", `/v1/webhooks/${segment(id)}`)).webhook
  }

  /** The answer carries the signing secret, shown this once. */
  async createWebhook(body: CreateWebhookBody, options: PostOptions = {}): Promise<WebhookWithSecret> {
    return (await this.#request<{ webhook: WebhookWithSecret }>("POST", "/v1/webhooks", body, options))
      .webhook
  }

  async updateWebhook(id: string, body: UpdateWebhookBody): Promise<Webhook> {
    return (await this.#request<{ webhook: Webhook }>("PATCH", `/v1/webhooks/${segment(id)}`, body)).webhook
  }

  async deleteWebhook(id: string): Promise<Deleted> {
    return this.#request<Deleted>("DELETE", `/v1/webhooks/${segment(id)}`)
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
    params: DeliveryListParams = {}
  ): ListRequest<DeliveryListPage, Delivery> {
    return this.#list(
      `/v1/webhooks/${segment(webhookId)}/deliveries`,
      params,
      (page: DeliveryListPage) => page.deliveries
    )
  }

  async getDelivery(webhookId: string, deliveryId: string): Promise<Delivery> {
    const path = `/v1/webhooks/${segment(webhookId)}/deliveries/${segment(deliveryId)}`
    return (await this.#request<{ delivery: Delivery }>("GET", path)).delivery
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
    itemsOf: (page: Page) => ReadonlyArray<Item>
  ): ListRequest<Page, Item> {
    const { cursor, ...rest } = params
    return new ListRequest(
      (next) =>
        this.#request<Page>("GET", `${path}${query(next === undefined ? rest : { ...rest, cursor: next })}`),
      itemsOf,
      cursor
    )
  }

  async #request<T>(method: string, path: string, body?: unknown, options: PostOptions = {}): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#apiKey}`,
      accept: "application/json"
    }
    if (body !== undefined) headers["content-type"] = "application/json"
    // One key for every attempt: a retry after a lost answer replays it instead of creating twice.
    if (method === "POST") headers["idempotency-key"] = options.idempotencyKey ?? crypto.randomUUID()
    const init = { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }
    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < this.#maxRetries
      const backoff = () => {
        const ceiling = Math.min(MAX_BACKOFF_MS, this.#retryDelayMs * 2 ** attempt)
        return ceiling / 2 + Math.random() * (ceiling / 2)
      }
      let response: FetchResponse
      try {
        response = await this.#fetch(`${this.#baseUrl}${path}`, init)
      } catch (cause) {
        if (!canRetry)
          throw new IntakeConnectionError(`${method} ${path} failed: ${String(cause)}`, { cause })
        await sleep(backoff())
        continue
      }
      const text = await response.text()
      const envelope = parseEnvelope(text)
      if (envelope === undefined) {
        if (canRetry && response.status >= 500) {
          await sleep(backoff())
          continue
        }
        throw new IntakeUnexpectedResponse(response.status, text)
      }
      if (envelope.success) return envelope.data as T
      const error = new IntakeError(response.status, envelope.error, response.headers.get("x-request-id"))
      if (canRetry && response.status >= 500) {
        await sleep(backoff())
        continue
      }
      if (canRetry && envelope.error.code === "rate_limit_exceeded") {
        const seconds =
          retryAfterSeconds(response.headers.get("retry-after"), Date.now()) ??
          envelope.error.details.retry_after
        if (seconds <= this.#maxRetryAfterSeconds) {
          await sleep(seconds * 1000)
          continue
        }
      }
      throw error
    }
  }
}
