// A matrix-unit tile path's once-per-process self-check (bf16_tiles_check.h):
// the first call, from whichever thread, runs the check; every later call
// (any thread) gets its verdict. A path that fails it is not used for the
// rest of the process (prefix_attention_bf16.cc falls back and says why in
// attentionKernelPaths' bf16Note). No signal handler: a check that would
// fault must find that out first (AmxBf16Tiles::Unusable).
#pragma once

#include <mutex>
#include <new>
#include <string>

namespace pjrt_score {
namespace attention {

class Bf16TilesGate {
 public:
  // check: true when the path may run; writes what it found (why not, when false) to *detail.
  using Check = bool (*)(std::string* detail);

  explicit Bf16TilesGate(Check check) : check_(check) {}
  Bf16TilesGate(const Bf16TilesGate&) = delete;
  Bf16TilesGate& operator=(const Bf16TilesGate&) = delete;

  // Empty when the path passed its check; else why it did not ("failed its self-check ...").
  const std::string& Failure() {
    std::call_once(once_, [this] {
      std::string detail;
      bool ok = false;
      try {
        ok = check_(&detail);
      } catch (const std::bad_alloc&) {
        detail = "could not allocate its self-check";
      }
      if (!ok) failure_ = detail.empty() ? "failed its self-check" : detail;
    });
    return failure_;
  }

 private:
  Check check_;
  std::once_flag once_;
  std::string failure_;
};

}  // namespace attention
}  // namespace pjrt_score
