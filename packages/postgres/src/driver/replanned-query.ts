/** A named statement PostgreSQL plans for each run's values (statementSteps' `planned`). */
import type { PgConnection } from "./pg-internals.js"
import { PreparedQuery, rowDescriptions } from "./prepared-query.js"

/**
 * How many runs of a named statement PostgreSQL plans for their values before it may settle
 * on a generic plan, one made for no value in particular (its documentation of PREPARE:
 * "the first five executions are done with custom plans").
 */
const CUSTOM_PLAN_RUNS = 5

/** The runs each replanned statement had on a connection; every fifth run starts a new name. */
const replannedRuns = new WeakMap<PgConnection, Map<string, number>>()

/**
 * A named statement that PostgreSQL plans for the values of each run: after five runs under
 * one name on a connection, that name is closed and the statement prepared under the next
 * one, in the same write as its run. With the text kept under one name, a page of a bot's
 * submissions got a generic plan after its fifth run, and in a database of many small bots
 * that plan read and sorted all of a bot's submissions for each page: 6.6 ms for a bot of
 * 20,000 against 0.2 (docs/performance.md, Statements on pg). Sent unnamed, PostgreSQL would
 * parse it on every run: 45 us more CPU a page in PostgreSQL, 5 to 8% more in this process.
 */
export class ReplannedQuery extends PreparedQuery {
  override prepare(connection: PgConnection) {
    let runs = replannedRuns.get(connection)
    if (runs === undefined) {
      runs = new Map()
      replannedRuns.set(connection, runs)
    }
    const run = runs.get(this.name) ?? 0
    runs.set(this.name, run + 1)
    const generation = Math.floor(run / CUSTOM_PLAN_RUNS)
    if (run > 0 && run % CUSTOM_PLAN_RUNS === 0) {
      const spent = `${this.name}_${generation - 1}`
      // Closing a name the session does not hold is no error: a first run that failed.
      connection.close({ type: "S", name: spent })
      delete connection.parsedStatements[spent]
      rowDescriptions.get(connection)?.delete(spent)
    }
    this.name = `${this.name}_${generation}`
    super.prepare(connection)
  }
}
