module @m {
  func.func public @main(%x: tensor<3xbf16>, %p: tensor<3xi1>) -> (tensor<3xf32>) {
    %0 = "stablehlo.convert"(%x) : (tensor<3xbf16>) -> tensor<3xf32>
    %1 = "stablehlo.constant"() {value = dense<[1.0, -2.5, 3.0e+2]> : tensor<3xf32>} : () -> tensor<3xf32>
    %2 = "stablehlo.select"(%p, %0, %1) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "func.return"(%2) : (tensor<3xf32>) -> ()
  }
}
