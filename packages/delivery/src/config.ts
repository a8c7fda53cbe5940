/**
 * The delivery engine's configuration (docs/rules.md, Running), read through effect
 * `Config`, and the layers that run it: the server uses them for its in-process
 * dispatcher, the worker process for its own.
 */
import { randomUUID } from "node:crypto"
import {
  DeliveriesLive,
  DeliveryHistoryPurgeLive,
  DeliveryIsolation,
  DeliverySettings,
  type DeliverySettingsValues,
  RetrySchedule
} from "@intake/domain"
import { NodeReceiverClient } from "@intake/node"
import { Config, ConfigError, Effect, Either, Layer } from "effect"
import { type DispatcherOptions, runDispatcher } from "./dispatcher.js"

const millis = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail((text) =>
      Either.mapLeft(RetrySchedule.parseDuration(text), (message) => ConfigError.InvalidData([], message))
    )
  )

const atLeastOne = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.withDefault(fallback),
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 })
  )

/**
 * The per-endpoint isolation (docs/webhooks.md, "Isolation"): WEBHOOK_ENDPOINT_CONCURRENCY
 * (attempts of one endpoint in flight across every dispatcher, default 8),
 * WEBHOOK_CIRCUIT_FAILURES (failures in a row that open its circuit, default 5),
 * WEBHOOK_CIRCUIT_COOLDOWN (how long it first stays open, default 30s) and
 * WEBHOOK_CIRCUIT_COOLDOWN_MAX (the longest, default 1h). Server and worker read the same.
 */
export const isolationConfig: Config.Config<DeliveryIsolation.IsolationPolicy> = Config.all({
  maxInFlight: atLeastOne("WEBHOOK_ENDPOINT_CONCURRENCY", DeliveryIsolation.DEFAULT_ISOLATION.maxInFlight),
  circuitFailures: atLeastOne(
    "WEBHOOK_CIRCUIT_FAILURES",
    DeliveryIsolation.DEFAULT_ISOLATION.circuitFailures
  ),
  cooldownMs: millis("WEBHOOK_CIRCUIT_COOLDOWN", "30s"),
  maxCooldownMs: millis("WEBHOOK_CIRCUIT_COOLDOWN_MAX", "1h")
})

export interface DeliveryConfig {
  readonly allowPrivateNetworks: boolean
  readonly retrySchedule: ReadonlyArray<number>
  readonly disableAfterMs: number
  /** WEBHOOK_DISPATCH_CONCURRENCY: attempts in flight at once per dispatcher (default 32). */
  readonly concurrency: number
  /** WEBHOOK_POLL_INTERVAL: longest sleep between looks at the queue (default 1s). */
  readonly pollIntervalMs: number
  /**
   * WEBHOOK_LEASE: how long a claimed attempt stays with its dispatcher (default 15s, above
   * the 10 s an attempt may take: an attempt starts only while it can end a second before its
   * lease does); a dispatcher that dies or freezes has its claims taken over then.
   */
  readonly leaseMs: number
  readonly isolation: DeliveryIsolation.IsolationPolicy
  /** WEBHOOK_RETENTION: finished attempts and events older than this are purged (default 30d). */
  readonly retentionMs: number
}

export const deliveryConfig: Config.Config<DeliveryConfig> = Config.all({
  allowPrivateNetworks: Config.boolean("WEBHOOK_ALLOW_PRIVATE_NETWORKS").pipe(Config.withDefault(false)),
  retrySchedule: Config.string("WEBHOOK_RETRY_SCHEDULE").pipe(
    Config.withDefault(RetrySchedule.DEFAULT_RETRY_SCHEDULE),
    Config.mapOrFail((text) =>
      Either.mapLeft(RetrySchedule.parseRetrySchedule(text), (message) =>
        ConfigError.InvalidData([], message)
      )
    )
  ),
  disableAfterMs: millis("WEBHOOK_DISABLE_AFTER", RetrySchedule.DEFAULT_DISABLE_AFTER),
  concurrency: Config.integer("WEBHOOK_DISPATCH_CONCURRENCY").pipe(
    Config.withDefault(32),
    Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 })
  ),
  pollIntervalMs: millis("WEBHOOK_POLL_INTERVAL", "1s"),
  leaseMs: millis("WEBHOOK_LEASE", "15s"),
  isolation: isolationConfig,
  retentionMs: millis("WEBHOOK_RETENTION", RetrySchedule.DEFAULT_RETENTION)
})

export interface DeliveryEngineOptions {
  readonly allowPrivateNetworks: boolean
  readonly settings?: Partial<DeliverySettingsValues>
  /** Receiver time limit; default 10 s. */
  readonly timeoutMs?: number
}

/**
 * The Deliveries use case with its settings and the Node receiver client. Needs the
 * ports (DeliveryRepository, the repositories, AddressResolver, …) and WebhookSettings.
 */
export const deliveryEngine = (options: DeliveryEngineOptions) =>
  DeliveriesLive.pipe(
    Layer.provide(
      NodeReceiverClient({
        allowPrivateNetworks: options.allowPrivateNetworks,
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs })
      })
    ),
    Layer.provide(
      DeliverySettings.layer({
        ...(options.timeoutMs === undefined ? {} : { attemptTimeoutMs: options.timeoutMs }),
        ...options.settings
      })
    )
  )

/** The retention purge (docs/webhooks.md, "Data kept") with these settings; needs DeliveryRepository. */
export const historyPurgeLayer = (settings: Partial<DeliverySettingsValues>) =>
  DeliveryHistoryPurgeLive().pipe(Layer.provide(DeliverySettings.layer(settings)))

/** A dispatcher running in the background for the layer's lifetime; stops gracefully with it. */
export const dispatcherLayer = (options: Omit<DispatcherOptions, "claimToken">) =>
  Layer.scopedDiscard(
    Effect.forkScoped(runDispatcher({ ...options, claimToken: `dsp_${randomUUID().replaceAll("-", "")}` }))
  )
