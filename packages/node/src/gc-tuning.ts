/**
 * Imported first by each process's entry point, for its side effect: V8's garbage collector
 * is tuned before anything else allocates (docs/performance.md, Memory and garbage collection).
 *
 * - Allocation-site pretenuring off. Under load, V8 judged the sites that build a request's
 *   objects (a page's rows, the answer) long-lived and allocated them straight in the old
 *   generation, where they died a few milliseconds later: every scavenge then walked them,
 *   and the old generation filled with garbage for the full collector. Left in the young
 *   generation, they die there cheaply.
 * - The old generation may grow to twice what a full collection left alive, no more and no
 *   less. V8 picks that factor itself between 1.1 and 4: fresh from start-up it let the old
 *   generation of a server with 30 MB alive fill with promoted garbage up to about 150 MB
 *   (peak RSS about 100 MB higher), and under steady load it ran a full collection every
 *   few seconds.
 */
import { setFlagsFromString } from "node:v8"

/** The V8 flags every process sets (gc-tuning.test.ts checks that this Node's V8 knows them). */
export const V8_FLAGS = ["--no-allocation-site-pretenuring", "--heap-growing-percent=100"] as const

for (const flag of V8_FLAGS) setFlagsFromString(flag)
