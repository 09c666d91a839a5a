/**
 * lib/util: small helpers below every other room: the cache directory, the
 * element-type table, static-shape helpers, the RoPE frequencies, the
 * pinned CUDA plugin release, the base error class.
 * May import: nothing in lib/.
 */
export { cacheDir } from './cache-dir';
export { sameDims, elementCount, dimsProblem } from './dims';
export { ELEMENT_TYPES, isElementType, elementKind, elementTypeFromMlir } from './element-types';
export type { ElementKind, ElementType, ElementTypeInfo } from './element-types';
export { CUDA_PLUGIN_PIN } from './cuda-plugin-pin';
export { ropeFrequencies, yarnMscale } from './rope';
export type { RopeFrequencies, RopeScaling } from './rope';
export { mapInOrder, type InOrderOptions } from './in-order';
export { PjrtScoreError } from './errors';
