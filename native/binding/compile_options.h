// The serialized xla.CompileOptionsProto a compile hands the plugin: the base
// build options (one replica, one partition) and, per XLA option the caller
// sets, one env_option_overrides entry, which XLA's PJRT clients apply to the
// compile's DebugOptions (docs/gpu.md, 'XLA options').
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pjrt_score {

class CompileOptions {
 public:
  // Reads { name: boolean | number | string } (undefined or null: none).
  // Throws a JS TypeError for anything else (names must be non-empty
  // [a-z0-9_], numbers finite, strings free of NUL), so a malformed option
  // never reaches the plugin; an unknown name is the plugin's InvalidArgument.
  static CompileOptions FromJs(Napi::Env env, const Napi::Value& value);

  // The proto bytes; with no overrides exactly the base build options.
  std::string Serialize() const;

 private:
  enum class Kind { kBool, kInt, kDouble, kString };
  struct Override {
    std::string name;
    Kind kind = Kind::kBool;
    bool bool_value = false;
    int64_t int_value = 0;
    double double_value = 0;
    std::string string_value;
  };
  std::vector<Override> overrides_;  // sorted by name: the same options give the same bytes
};

}  // namespace pjrt_score
