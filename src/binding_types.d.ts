/* Types of the native binding's arguments and results (prepended to binding.d.ts by napi build). */

/** The dtypes a tensor can have; tfjs's five plus those TF ops may return. */
export type DType =
  | 'float32' | 'int32' | 'bool' | 'complex64' | 'string'
  | 'uint8' | 'int64' | 'float64' | 'int8' | 'int16' | 'uint16' | 'uint32' | 'uint64'
  | 'float16' | 'bfloat16' | 'complex128' | 'resource' | 'variant'

/** Dtypes whose elements live in a typed array (so `alloc` can make them). */
export type NumericDType = Exclude<DType, 'string' | 'resource' | 'variant'>

/*
 * `TypedArray` (declared by napi below) holds each dtype: Float32Array (float32; complex64 as
 * interleaved re, im), Int32Array, Uint8Array (bool, uint8), BigInt64Array (int64), Float64Array,
 * Int8Array, Int16Array, Uint16Array (also float16/bfloat16 bits), Uint32Array, BigUint64Array.
 */

/** An op attribute. An array `value` sets a list attr; a `shape` is dims (-1 unknown) or null (unknown rank). */
export interface OpAttr {
  name: string
  /** A name, or tfjs-node's TF_ATTR_* number (0 string … 5 shape). */
  type: 'string' | 'int' | 'float' | 'bool' | 'type' | 'shape' | 0 | 1 | 2 | 3 | 4 | 5
  value: string | number | boolean | DType | number[] | null | Array<string | number | boolean | DType | number[] | null>
}

/** A tensor an op produced: its id (for later ops, reads and deleteTensor), shape and dtype. */
export interface TensorInfo {
  id: number
  shape: number[]
  dtype: DType
}

/**
 * The linked TensorFlow version, as tfjs-node's binding names it (client libraries read
 * `tf.backend().binding.TF_Version` to tell that tfjs-node is present). Set by the loader
 * (js/native_loader_core.js), so present once `require('tfjs-node-rs')` has run.
 */
export declare const TF_Version: string
