'use strict';
// The fuzz targets by name, in the order `npm run fuzz` runs them.
module.exports = {
  gguf: './gguf',
  safetensors: './safetensors',
  'tokenizer-json': './tokenizer-json',
  request: './request',
  rerank: './rerank',
  http: './http',
  'native-compile': './native-compile',
  'native-deserialize': './native-deserialize',
  'native-upload': './native-upload',
  'native-ffi': './native-ffi',
};
