# Builds the same sources as CMakeLists.txt (every .cc under native/, listed by
# one expression, as the CMake GLOB_RECURSE does) with node-gyp: `npm run build:gyp`.
# The install and prebuild steps use cmake-js; this file stays equivalent.
{
  "targets": [
    {
      "target_name": "pjrt_score",
      "sources": ["<!@(node -p \"require('fs').readdirSync('native', { recursive: true }).filter((f) => f.endsWith('.cc')).map((f) => 'native/' + f).sort().join(' ')\")"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")", "native"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-Wall", "-Wextra"],
      "libraries": ["-ldl"]
    }
  ]
}
