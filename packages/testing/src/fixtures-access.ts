/**
 * Test-data builders for the access area: provision a workspace and a key in one call
 * through the real Provisioning use case, and memory layers to run them on.
 */
import {
  Access,
  type AccessSettings,
  type ApiKey,
  ApiKeyRepository,
  makeAccessLayer,
  makeWorkspaceId,
  type NewApiKey,
  type NewWorkspace,
  type Plan,
  Provisioning,
  ProvisioningLive,
  RateLimiter,
  type Scope,
  StorageUnavailable,
  type Workspace
} from "@intake/domain"
import {
  MemoryAccessInvalidation,
  MemoryApiKeyRepository,
  MemoryDatabase,
  MemoryRateLimiter,
  MemoryUnitOfWork,
  MemoryWorkspaceRepository
} from "@intake/memory/internal"
import { PlatformLive } from "@intake/node"
import { Context, Effect, Layer, Ref } from "effect"

// ---------------------------------------------------------------- layers

/**
 * Access and Provisioning on fresh memory adapters (one MemoryDatabase per build), with
 * the ports exposed too. Build one per test when a test depends on the limiter's
 * fail-open state or on the clock starting at 0.
 */
export const accessTestLayer = <Extra = never>(
  options: {
    readonly settings?: Partial<AccessSettings>
    /** Replaces the memory rate limiter, e.g. with ControlledRateLimiter (its extra services stay visible). */
    readonly rateLimiter?: Layer.Layer<RateLimiter | Extra>
    /** Wraps the memory key repository, e.g. to fail or hold its lookups. */
    readonly apiKeys?: (inner: ApiKeyRepository["Type"]) => ApiKeyRepository["Type"]
  } = {}
) => {
  // Without an override, Extra is never and the memory limiter provides exactly RateLimiter.
  const limiter = (options.rateLimiter ?? MemoryRateLimiter) as Layer.Layer<RateLimiter | Extra>
  const wrapKeys = options.apiKeys
  const apiKeys =
    wrapKeys === undefined
      ? MemoryApiKeyRepository
      : Layer.effect(ApiKeyRepository, Effect.map(ApiKeyRepository, wrapKeys)).pipe(
          Layer.provide(MemoryApiKeyRepository)
        )
  const ports = Layer.mergeAll(
    MemoryWorkspaceRepository,
    apiKeys,
    MemoryAccessInvalidation,
    MemoryUnitOfWork,
    limiter
  ).pipe(Layer.provideMerge(MemoryDatabase.Default), Layer.merge(PlatformLive))
  return Layer.mergeAll(makeAccessLayer(options.settings), ProvisioningLive).pipe(Layer.provideMerge(ports))
}

// ---------------------------------------------------------------- a limiter that misbehaves on demand

export type LimiterMode = "answer" | "fail" | "hang"

/** Switches ControlledRateLimiter between answering, failing and never answering. */
export class LimiterControl extends Context.Tag("@intake/testing/LimiterControl")<
  LimiterControl,
  {
    readonly setMode: (mode: LimiterMode) => Effect.Effect<void>
    /** How many times the limiter was asked. */
    readonly calls: Effect.Effect<number>
  }
>() {}

/** The memory limiter behind a switch; starts in "answer". Provide LimiterControl to tests too. */
export const ControlledRateLimiter = Layer.effectContext(
  Effect.gen(function* () {
    const inner = yield* RateLimiter
    const mode = yield* Ref.make<LimiterMode>("answer")
    const calls = yield* Ref.make(0)
    const controlled = <A>(answer: Effect.Effect<A, StorageUnavailable>, timeoutMs: number) =>
      Effect.zipRight(
        Ref.update(calls, (n) => n + 1),
        Effect.flatMap(Ref.get(mode), (current) =>
          current === "fail"
            ? Effect.fail(new StorageUnavailable({ operation: "RateLimiter.hit" }))
            : current === "hang"
              ? // A store that never answers: the limiter gives up at its bound, as the port requires.
                Effect.zipRight(
                  Effect.sleep(timeoutMs),
                  Effect.fail(new StorageUnavailable({ operation: "RateLimiter.hit" }))
                )
              : answer
        )
      )
    const limiter: RateLimiter["Type"] = {
      hit: (bucket, limit, windowMs, timeoutMs) =>
        controlled(inner.hit(bucket, limit, windowMs, timeoutMs), timeoutMs),
      peek: (bucket, limit, windowMs, timeoutMs) =>
        controlled(inner.peek(bucket, limit, windowMs, timeoutMs), timeoutMs)
    }
    return Context.make(RateLimiter, limiter).pipe(
      Context.add(LimiterControl, { setMode: (next) => Ref.set(mode, next), calls: Ref.get(calls) })
    )
  })
).pipe(Layer.provide(MemoryRateLimiter))

// ---------------------------------------------------------------- builders

export const bearer = (key: string): string => `Bearer ${key}`

/** A workspace, "pro" unless told otherwise. */
export const provisionWorkspace = (input: Partial<NewWorkspace> = {}) =>
  Effect.flatMap(Provisioning, (provisioning) =>
    provisioning.createWorkspace({ name: "Acme Intake", plan: "pro", ...input })
  ).pipe(Effect.orDie)

/** A key of the workspace; all read scopes unless told otherwise. */
export const issueApiKey = (workspaceId: string, input: Partial<NewApiKey> = {}) =>
  Effect.flatMap(Provisioning, (provisioning) =>
    provisioning.createApiKey(makeWorkspaceId(workspaceId), {
      scopes: ["read:intake-bots", "read:submissions"],
      ...input
    })
  ).pipe(Effect.orDie)

export interface ProvisionedKey {
  readonly workspace: Workspace
  readonly apiKey: ApiKey
  /** The full key, as the client holds it. */
  readonly key: string
  /** `Bearer <key>`, for the Authorization header. */
  readonly authorization: string
}

/**
 * A workspace of `plan` with one key of `scopes`. A free workspace cannot be issued keys,
 * so for `plan: "free"` the key is issued under pro and the workspace then moved to free,
 * as happens when a customer downgrades.
 */
export const provisionApiKey = (
  options: {
    readonly plan?: Plan
    readonly scopes?: ReadonlyArray<Scope>
    readonly workspace?: Partial<NewWorkspace>
    readonly key?: Partial<NewApiKey>
  } = {}
) =>
  Effect.gen(function* () {
    const plan = options.plan ?? "pro"
    const created = yield* provisionWorkspace({ ...options.workspace, plan: plan === "free" ? "pro" : plan })
    const issued = yield* issueApiKey(created.id, {
      ...(options.scopes === undefined ? {} : { scopes: options.scopes }),
      ...options.key
    })
    const workspace =
      plan === "free"
        ? yield* Effect.flatMap(Provisioning, (p) => p.updateWorkspace(created.id, { plan: "free" })).pipe(
            Effect.orDie
          )
        : created
    return {
      workspace,
      apiKey: issued.apiKey,
      key: issued.key,
      authorization: bearer(issued.key)
    } satisfies ProvisionedKey
  })

/** Authenticates `authorization` through Access. */
export const authenticate = (authorization: string | undefined) =>
  Effect.flatMap(Access, (access) => access.authenticate(authorization))
