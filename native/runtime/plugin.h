// A loaded PJRT plugin: the shared library, its API table, and typed calls.
// Plugins are loaded once per path and stay loaded for the life of the
// process (plugins are not written to be unloaded).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "runtime/pjrt_api.h"
#include "runtime/status.h"

namespace pjrt_score {

class Plugin {
 public:
  // Loads (or returns the already loaded) plugin at `path`, checks its API
  // version and initializes it. Thread-safe. On failure returns null and
  // fills `status`.
  static std::shared_ptr<Plugin> Load(const std::string& path, Status* status);

  int major_version() const { return major_; }
  int minor_version() const { return minor_; }
  const std::string& path() const { return path_; }

  bool HasSlot(pjrt::Slot slot) const;

  // The extension of `type` in the API's extension_start chain, or null.
  const void* FindExtension(int type) const;

  // Turns a PJRT_Error the plugin returned into a Status and destroys it.
  Status TakeError(pjrt::Error* error) const;

  // Calls slot with args; turns a returned PJRT_Error into a Status and
  // destroys it. A slot the plugin lacks yields UNIMPLEMENTED.
  template <class Args>
  Status Call(pjrt::Slot slot, Args* args) const {
    return CallRaw(slot, static_cast<void*>(args));
  }

  // Blocks until the event is ready (worker threads only), then destroys it.
  Status AwaitAndDestroy(pjrt::Event* event) const;
  void DestroyEvent(pjrt::Event* event) const;

 private:
  Plugin() = default;
  Status CallRaw(pjrt::Slot slot, void* args) const;
  void* SlotFn(pjrt::Slot slot) const;  // null when the table lacks the slot

  std::string path_;
  const pjrt::ApiHeader* api_ = nullptr;
  int major_ = 0;
  int minor_ = 0;
};

}  // namespace pjrt_score
