/**
 * lib/device-weights: a model's weights on the device. Turns the model
 * room's host weights into the arrays the decoder programs take (the layout
 * in hlo/decoder/layout.ts), in the weight type asked for, and uploads them
 * once per client, one array at a time.
 * May import: model (config, host weights, readers), hlo (its index only: the layout),
 * runtime (Client, DeviceBuffer), util.
 */
export { uploadWeights, type DeviceWeights, type UploadTimings } from './upload';
export { deviceArray } from './host-build';
export { f32ToBf16, quantizeBlocksInt8, transposeInto } from './convert';
export {
  chooseWeightType,
  weightBytes,
  WEIGHT_CHOICES,
  type WeightChoice,
  type WeightTypeChoice,
  type WeightHost,
} from './choose';
