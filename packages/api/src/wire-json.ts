/**
 * An answer's data already written as JSON: the text of a value of `A` as its endpoint's
 * schema encodes it. The server writes it into the success envelope as it is. A page of
 * submissions answers this way, its items written by `submissionListJson`, which passes each
 * submission's stored data through as text instead of parsing it and serializing it again
 * (docs/performance.md, Lists).
 */
export class WireJson<A> {
  /** The wire type the text encodes (for the compiler only; never set). */
  declare readonly wire: A
  constructor(readonly text: string) {}
}
