/** The packages an embedding service installs, in dependency order (scripts/pack-embedding.mjs). */
export declare const embeddingPackages: ReadonlyArray<string>
/** Builds them to dist/ and packs each into `destination` with `pnpm pack`. */
export declare const packEmbedding: (destination: string) => void
