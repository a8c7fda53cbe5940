/**
 * Imported first by each process's entry point, for its side effect: V8's allocation-site
 * pretenuring is turned off before anything else allocates (docs/choices.md, Performance at
 * the edge). Under load, V8 judged the sites that build a request's objects (a page's rows,
 * the answer) long-lived and allocated them straight in the old generation, where they died
 * a few milliseconds later: every scavenge then walked them, and the old generation filled
 * with garbage for the full collector. Left in the young generation, they die there cheaply.
 */
import { setFlagsFromString } from "node:v8"

setFlagsFromString("--no-allocation-site-pretenuring")
