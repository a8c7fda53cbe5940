/**
 * Gathers what many fibers submit and writes it in batches, as a database's group commit
 * does: while one batch is being written the next one gathers, so under load a batch holds
 * every attempt that finished meanwhile, and an attempt that finds the writer idle is written
 * at once (docs/webhooks.md, "How the engine sends").
 */
import { Chunk, Deferred, Effect, Exit, Queue, type Scope } from "effect"

export interface BatchWriter<A, B, E> {
  /** Hands one item to the next batch and waits for that batch's write; answers the item's own result. */
  readonly submit: (item: A) => Effect.Effect<B, E>
}

export interface BatchWriterOptions<A, B, E> {
  /** Writes a batch; answers one result per item, in the same order. */
  readonly write: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, E>
  /** The most items one write takes. */
  readonly maxBatch: number
  /**
   * A batch of fewer than `lingerBelow` items waits this long for more before it is written
   * (0: never): at a low rate the attempts of one event finish a few milliseconds apart, and
   * one write for all of them costs a third of three.
   */
  readonly lingerMs?: number
  readonly lingerBelow?: number
}

/**
 * The writer runs for the scope's lifetime. A batch once taken is written to its end, even
 * while the scope closes, so no submitter is left waiting: close the scope after the fibers
 * that submit (a scope closes what it opened last first).
 */
export const batchWriter = <A, B, E>(
  options: BatchWriterOptions<A, B, E>
): Effect.Effect<BatchWriter<A, B, E>, never, Scope.Scope> =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<readonly [A, Deferred.Deferred<B, E>]>()
    yield* Effect.addFinalizer(() => Queue.shutdown(queue))
    const writeBatch = (entries: ReadonlyArray<readonly [A, Deferred.Deferred<B, E>]>) =>
      Effect.flatMap(Effect.exit(options.write(entries.map(([item]) => item))), (exit) =>
        Effect.forEach(
          entries,
          ([, done], index) =>
            Deferred.done(
              done,
              Exit.flatMap(exit, (results) =>
                index < results.length
                  ? Exit.succeed(results[index]!)
                  : Exit.die("a batch write answered too few results")
              )
            ),
          { discard: true }
        )
      )
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(Queue.takeBetween(queue, 1, options.maxBatch)), (taken) => {
            const first = Chunk.toReadonlyArray(taken)
            const linger = options.lingerMs ?? 0
            if (linger === 0 || first.length >= (options.lingerBelow ?? options.maxBatch))
              return writeBatch(first)
            // Interrupted while it lingers (its scope closing), it writes what it has at once.
            return Effect.exit(restore(Effect.sleep(linger))).pipe(
              Effect.zipRight(Queue.takeUpTo(queue, options.maxBatch - first.length)),
              Effect.flatMap((more) => writeBatch([...first, ...Chunk.toReadonlyArray(more)]))
            )
          })
        )
      )
    )
    return {
      submit: (item) =>
        Effect.flatMap(Deferred.make<B, E>(), (done) =>
          Effect.zipRight(Queue.offer(queue, [item, done]), Deferred.await(done))
        )
    }
  })
