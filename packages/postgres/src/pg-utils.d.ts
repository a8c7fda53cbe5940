/** pg's own value conversion for a statement's parameters (pg/lib/utils.js, exported by pg's package; no types of its own). */
declare module "pg/lib/utils.js" {
  const utils: { readonly prepareValue: (value: unknown) => unknown }
  export default utils
}
