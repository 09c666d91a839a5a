/**
 * lib/device-weights: a model's weights on the device. Turns the model
 * room's host weights into the arrays the decoder programs take (the layout
 * in hlo/decoder-layout.ts) and uploads them once per client.
 * May import: model (config, host weights), hlo (the layout), runtime
 * (Client, DeviceBuffer), util.
 */
export { deviceArray, uploadWeights, type DeviceWeights } from './upload';
