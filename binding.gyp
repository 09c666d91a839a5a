# Builds the same sources as CMakeLists.txt (every native/*.cc, listed by one
# expression, as the CMake GLOB does) with node-gyp: `npm run build:gyp`.
# The install and prebuild steps use cmake-js; this file stays equivalent.
{
  "targets": [
    {
      "target_name": "pjrt_score",
      "sources": ["<!@(node -p \"require('fs').readdirSync('native').filter((f) => f.endsWith('.cc')).sort().map((f) => 'native/' + f).join(' ')\")"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-fvisibility=hidden", "-Wall", "-Wextra"],
      "libraries": ["-ldl"]
    }
  ]
}
