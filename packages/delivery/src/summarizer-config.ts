/**
 * The summarizer's configuration (INTAKE_SUMMARIZER…), read by the server and the worker
 * alike, and the layers it selects: the built-in summarizer, or the model summarizer with
 * its summary jobs and their runner (docs/summaries.md).
 */
import { randomUUID } from "node:crypto"
import { RetrySchedule, SummaryJobsLive, SummarySettings } from "@intake/domain"
import { Config, ConfigError, Effect, Either, Layer, Option, Redacted } from "effect"
import { runSummaryJobs } from "./summary-runner.js"

/** The default INTAKE_SUMMARIZER_URL: OpenAI's Responses API base. */
export const OPENAI_API_URL = "https://api.openai.com/v1"

export interface SummarizerConfig {
  /** INTAKE_SUMMARIZER: `built-in` (default) or `openai`. */
  readonly kind: "built-in" | "openai"
  /** INTAKE_SUMMARIZER_URL: the Responses API base (OpenAI's by default). */
  readonly url: string
  /** INTAKE_SUMMARIZER_MODEL: required with `openai`. */
  readonly model: Option.Option<string>
  /** INTAKE_SUMMARIZER_API_KEY: required for OpenAI itself; never logged. */
  readonly apiKey: Option.Option<Redacted.Redacted>
  /** INTAKE_SUMMARIZER_WAIT: how long submission.completed waits for the model's summary (10 s). */
  readonly waitMs: number
  /** INTAKE_SUMMARIZER_TIMEOUT: the longest one model call may take (10 s). */
  readonly timeoutMs: number
  /** INTAKE_SUMMARIZER_CONCURRENCY: model calls in flight per process (4). */
  readonly concurrency: number
}

const millis = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) =>
      Either.mapLeft(RetrySchedule.parseDuration(text), (message) => ConfigError.InvalidData([name], message))
    )
  )

const httpUrl = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) => {
      const url = URL.canParse(text) ? new URL(text) : null
      return url !== null && (url.protocol === "http:" || url.protocol === "https:")
        ? Either.right(text)
        : Either.left(ConfigError.InvalidData([name], "must be an http or https URL"))
    })
  )

export const summarizerConfig: Config.Config<SummarizerConfig> = Config.all({
  kind: Config.string("INTAKE_SUMMARIZER").pipe(
    Config.withDefault("built-in"),
    Config.mapOrFail((text) =>
      text === "built-in" || text === "openai"
        ? Either.right<SummarizerConfig["kind"]>(text)
        : Either.left(ConfigError.InvalidData(["INTAKE_SUMMARIZER"], "must be built-in or openai"))
    )
  ),
  url: httpUrl("INTAKE_SUMMARIZER_URL", OPENAI_API_URL),
  model: Config.option(Config.string("INTAKE_SUMMARIZER_MODEL")).pipe(
    Config.map(Option.filter((model) => model.trim() !== ""))
  ),
  apiKey: Config.option(Config.redacted("INTAKE_SUMMARIZER_API_KEY")).pipe(
    Config.map(Option.filter((key) => Redacted.value(key).trim() !== ""))
  ),
  waitMs: millis("INTAKE_SUMMARIZER_WAIT", "10s"),
  timeoutMs: millis("INTAKE_SUMMARIZER_TIMEOUT", "10s"),
  concurrency: Config.integer("INTAKE_SUMMARIZER_CONCURRENCY").pipe(
    Config.withDefault(4),
    Config.mapOrFail((n) =>
      n >= 1
        ? Either.right(n)
        : Either.left(ConfigError.InvalidData(["INTAKE_SUMMARIZER_CONCURRENCY"], "must be at least 1"))
    )
  )
}).pipe(
  Config.mapOrFail((config) => {
    if (config.kind === "built-in") return Either.right(config)
    if (Option.isNone(config.model))
      return Either.left(
        ConfigError.MissingData(
          ["INTAKE_SUMMARIZER_MODEL"],
          "must name the model when INTAKE_SUMMARIZER=openai"
        )
      )
    if (Option.isNone(config.apiKey) && config.url === OPENAI_API_URL)
      return Either.left(
        ConfigError.MissingData(
          ["INTAKE_SUMMARIZER_API_KEY"],
          "must be set to reach OpenAI (INTAKE_SUMMARIZER_URL unset)"
        )
      )
    return Either.right(config)
  })
)

/**
 * The layers the configuration selects: `summarizer` replaces the ports' built-in one
 * (none for `built-in`), `settings` feeds the use cases, `runner` runs the jobs for the
 * layer's lifetime (it needs the ports and the use cases' dependencies).
 */
export const summarizerLayers = (config: SummarizerConfig) => {
  const settings = SummarySettings.layer({ deliveryWaitMs: config.waitMs, timeoutMs: config.timeoutMs })
  if (config.kind === "built-in" || Option.isNone(config.model)) return { settings, model: Option.none() }
  const model = config.model.value
  // Loaded only here: a process on the built-in summarizer never holds the AI packages.
  const summarizer = Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("@intake/node/model-summarizer")),
      ({ ModelSummarizer }) => ModelSummarizer({ url: config.url, model, apiKey: config.apiKey })
    )
  )
  const runner = Layer.scopedDiscard(
    Effect.forkScoped(
      runSummaryJobs({
        concurrency: config.concurrency,
        pollIntervalMs: 1_000,
        claimToken: `sum_${randomUUID().replaceAll("-", "")}`
      })
    )
  ).pipe(Layer.provide(SummaryJobsLive), Layer.provide(settings))
  return { settings, model: Option.some({ summarizer, runner }) }
}
