{
  "targets": [
    {
      "target_name": "pjrt_score",
      "sources": [
        "native/addon.cc",
        "native/buffer.cc",
        "native/client.cc",
        "native/element_type.cc",
        "native/errors.cc",
        "native/executable.cc",
        "native/large_stack.cc",
        "native/plugin.cc",
        "native/program_nesting.cc",
        "native/promise_worker.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-Wall", "-Wextra"],
      "libraries": ["-ldl"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LIBRARY": "libc++",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      }
    }
  ]
}
