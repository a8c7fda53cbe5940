/**
 * The in-process sliding-window log. Not transactional data, so it keeps a Map of its own
 * rather than going through MemoryDatabase. Memory stays bounded: each hit drops what left
 * its bucket's window, an emptied bucket is deleted, and once per sweep interval buckets
 * nobody asked about since their window passed are deleted too.
 */
import { type EpochMillis, RateLimiter, SlidingWindowLog } from "@intake/domain"
import { Clock, Effect, Layer } from "effect"

interface Bucket {
  readonly log: SlidingWindowLog
  windowMs: number
}

const SWEEP_INTERVAL_MS = 60_000

/** The limiter and how many buckets it holds (for tests of its memory bound). */
export const makeMemoryRateLimiter = () => {
  const buckets = new Map<string, Bucket>()
  let lastSweep = 0

  const sweep = (now: EpochMillis) => {
    if (now - lastSweep < SWEEP_INTERVAL_MS) return
    lastSweep = now
    for (const [name, bucket] of buckets) {
      const newest = bucket.log.newest
      if (newest === undefined || newest <= now - bucket.windowMs) buckets.delete(name)
    }
  }

  const limiter: RateLimiter["Type"] = {
    // Answers at once: the time bound has nothing to cut.
    hit: (bucket, limit, windowMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        sweep(now)
        const found = buckets.get(bucket)
        const entry = found ?? { log: new SlidingWindowLog(), windowMs }
        entry.windowMs = windowMs
        const decision = entry.log.hit(now, limit, windowMs)
        if (entry.log.size === 0) buckets.delete(bucket)
        else if (found === undefined) buckets.set(bucket, entry)
        return decision
      }),
    peek: (bucket, limit, windowMs) =>
      Effect.map(Clock.currentTimeMillis, (now) =>
        (buckets.get(bucket)?.log ?? new SlidingWindowLog()).peek(now, limit, windowMs)
      )
  }
  return { limiter, bucketCount: () => buckets.size }
}

export const MemoryRateLimiter = Layer.sync(RateLimiter, () => makeMemoryRateLimiter().limiter)
