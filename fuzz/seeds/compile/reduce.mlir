func.func @main(%x: tensor<4x6xf32>) -> (tensor<4xf32>, tensor<i32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
  %c = stablehlo.constant dense<7> : tensor<i32>
  return %0, %c : tensor<4xf32>, tensor<i32>
}
