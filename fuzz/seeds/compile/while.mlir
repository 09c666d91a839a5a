func.func @main(%n: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %acc = %zero) : tensor<i32>, tensor<i32>
    cond {
      %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %i2 = stablehlo.add %i, %one : tensor<i32>
      %a2 = stablehlo.add %acc, %i : tensor<i32>
      stablehlo.return %i2, %a2 : tensor<i32>, tensor<i32>
    }
  return %r#1 : tensor<i32>
}
