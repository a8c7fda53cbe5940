/** Ids unique across the tests of one run, so suites sharing a store do not collide. */
let counter = 0
const run = Math.floor(Math.random() * 36 ** 6)
  .toString(36)
  .padStart(6, "0")

export const uniqueId = (prefix: string): string =>
  `${prefix}_t${run}${(counter++).toString(36).padStart(6, "0")}`
